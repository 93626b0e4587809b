// Included (`include!`) by the tests and the bench that run small HTTP servers on loopback.

/// The head of an HTTP request (request line and headers, up to the blank line), read byte by
/// byte so that nothing after it is consumed; `None` when the stream ends first.
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The value of the header `name` (any case) in a request or response head; empty when absent.
#[allow(dead_code)] // Not every includer looks at headers.
fn header_value(head: &str, name: &str) -> String {
    head.lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
        .unwrap_or_default()
}
