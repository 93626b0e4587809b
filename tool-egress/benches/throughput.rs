//! A 100 MB download from a local server, directly and through the proxy (CONNECT tunnel, plain
//! HTTP, SOCKS5), and the time to the first byte of a small answer.
//!
//! `cargo bench -p tool-egress --bench throughput` (`-- --mb N --runs N` to change the size and
//! the number of runs; the median run is reported).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_egress::{EgressPolicy, EgressProxy};

const CHUNK: usize = 1024 * 1024;

/// Serves `GET /<bytes>` with that many bytes.
async fn server() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let chunk = vec![b'x'; CHUNK];
        while let Ok((mut stream, _)) = listener.accept().await {
            let chunk = chunk.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let head = read_head(&mut stream).await.unwrap_or_default();
                let size: usize = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|p| p.trim_start_matches('/').parse().ok())
                    .unwrap_or(0);
                let header =
                    format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n");
                let _ = stream.write_all(header.as_bytes()).await;
                let mut left = size;
                while left > 0 {
                    let n = left.min(CHUNK);
                    if stream.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    addr
}

#[derive(Clone, Copy)]
enum Route {
    Direct,
    Connect,
    PlainHttp,
    Socks5,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Connect => "proxy, CONNECT tunnel",
            Route::PlainHttp => "proxy, plain HTTP",
            Route::Socks5 => "proxy, SOCKS5",
        }
    }
}

/// Downloads `size` bytes by `route`; returns (time to the first body byte, total time).
async fn download(route: Route, server: SocketAddr, proxy: SocketAddr, size: usize) -> (Duration, Duration) {
    let start = Instant::now();
    let host = format!("bench.test:{}", server.port());
    let (mut stream, request) = match route {
        Route::Direct => (
            TcpStream::connect(server).await.unwrap(),
            format!("GET /{size} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        ),
        Route::Connect => {
            let mut stream = TcpStream::connect(proxy).await.unwrap();
            stream
                .write_all(format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let head = read_head(&mut stream).await.unwrap_or_default();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            (stream, format!("GET /{size} HTTP/1.1\r\nHost: {host}\r\n\r\n"))
        }
        Route::PlainHttp => (
            TcpStream::connect(proxy).await.unwrap(),
            format!("GET http://{host}/{size} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        ),
        Route::Socks5 => {
            let mut stream = TcpStream::connect(proxy).await.unwrap();
            stream.write_all(&[5, 1, 0]).await.unwrap();
            let mut reply = [0u8; 2];
            stream.read_exact(&mut reply).await.unwrap();
            let name = b"bench.test";
            let mut request = vec![5, 1, 0, 3, name.len() as u8];
            request.extend_from_slice(name);
            request.extend_from_slice(&server.port().to_be_bytes());
            stream.write_all(&request).await.unwrap();
            let mut reply = [0u8; 10];
            stream.read_exact(&mut reply).await.unwrap();
            assert_eq!(reply[1], 0);
            (stream, format!("GET /{size} HTTP/1.1\r\nHost: {host}\r\n\r\n"))
        }
    };
    let _ = stream.set_nodelay(true);
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await.unwrap_or_default();
    let first = start.elapsed();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-length:").and_then(|v| v.trim().parse().ok())
        })
        .expect("a content length");
    assert_eq!(length, size, "{head}");
    let mut buffer = vec![0u8; 256 * 1024];
    let mut got = 0;
    while got < size {
        let n = stream.read(&mut buffer).await.unwrap();
        assert!(n > 0, "the body ended early at {got} bytes");
        got += n;
    }
    (first, start.elapsed())
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `make` on a runtime of its own, on a thread of its own, and returns what it made.
fn on_own_thread<T: Send + 'static>(
    make: impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>> + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let _ = tx.send(make().await);
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

fn main() {
    let mb = arg("--mb", 100);
    let runs = arg("--runs", 7);
    // The server, the proxy and the client each on a thread of their own, as the three
    // processes they are in use; none waits for another's turn on a shared runtime.
    let server = on_own_thread(|| Box::pin(server()));
    let proxy = on_own_thread(|| {
        Box::pin(async {
            let policy = EgressPolicy::new()
                .resolve("bench.test", [Ipv4Addr::LOCALHOST.into()])
                .allow_host("bench.test", "bench")
                .and_then(|p| p.allow_address("127.0.0.1", "bench"))
                .unwrap();
            let proxy = Box::leak(Box::new(EgressProxy::start(policy, None).await.unwrap()));
            // The proxy's thread, whose time on the CPU is read from outside it.
            let thread = std::fs::read_link("/proc/thread-self").ok();
            (proxy.addr(), thread)
        })
    });
    let (proxy, proxy_thread) = proxy;
    let proxy_cpu = move || -> Option<Duration> {
        let path = std::path::Path::new("/proc").join(proxy_thread.as_ref()?).join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let size = mb * 1024 * 1024;
        println!("{mb} MB download from a loopback server, median of {runs} runs (after one warm-up):");
        let mut direct_rate = 0.0;
        for route in [Route::Direct, Route::Connect, Route::PlainHttp, Route::Socks5] {
            download(route, server, proxy, size).await;
            let mut totals = Vec::new();
            let mut firsts = Vec::new();
            let cpu_before = proxy_cpu();
            for _ in 0..runs {
                totals.push(download(route, server, proxy, size).await.1);
            }
            let cpu = proxy_cpu().zip(cpu_before).map(|(after, before)| (after - before) / runs as u32);
            for _ in 0..runs {
                firsts.push(download(route, server, proxy, 16).await.0);
            }
            let total = median(totals);
            let rate = size as f64 / total.as_secs_f64() / 1e6;
            if let Route::Direct = route {
                direct_rate = rate;
            }
            let cpu = match (route, cpu) {
                (Route::Direct, _) | (_, None) => String::new(),
                (_, Some(cpu)) => format!(
                    "   proxy CPU {:.1} ms per download ({:.0} MB/s per core)",
                    cpu.as_secs_f64() * 1e3,
                    size as f64 / cpu.as_secs_f64() / 1e6
                ),
            };
            println!(
                "  {:<22} {:>7.1} ms {:>6.0} MB/s {:>5.2}x direct  first byte (16 B): {:>5.0} µs{cpu}",
                route.name(),
                total.as_secs_f64() * 1e3,
                rate,
                rate / direct_rate,
                median(firsts).as_secs_f64() * 1e6,
            );
        }
    });
}

include!("../tests/support/read_head.rs");
