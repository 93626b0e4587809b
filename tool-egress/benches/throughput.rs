//! A 100 MB download from a local server, directly and through the proxy (CONNECT tunnel, plain
//! HTTP, SOCKS5), and the time to the first byte of a small answer.
//!
//! `cargo bench -p tool-egress --bench throughput` (`-- --mb N --runs N --routes connect,http,socks5`
//! to change the size, the number of rounds and the routes; medians are reported). With
//! `--link-mbps N` the server sends at most N MB/s, as a link of that speed would: on loopback
//! with no limit the download is bound by the CPU that server, proxy and client share.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_egress::{EgressPolicy, EgressProxy};

const CHUNK: usize = 1024 * 1024;

/// Serves `GET /<bytes>` with that many bytes, at most `--link-mbps` MB/s when given.
async fn server() -> SocketAddr {
    let link = number("--link-mbps", 0);
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
                let started = tokio::time::Instant::now();
                while left > 0 {
                    let n = left.min(CHUNK);
                    if link > 0 {
                        // Not ahead of what a link of this speed would have carried by now.
                        let sent = (size - left) as f64;
                        let due = started + Duration::from_secs_f64(sent / (link as f64 * 1024.0 * 1024.0));
                        tokio::time::sleep_until(due).await;
                    }
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

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or(default.to_owned())
}

fn number(name: &str, default: usize) -> usize {
    let value = arg(name, &default.to_string());
    value.parse().unwrap_or_else(|_| panic!("{name} takes a number, not `{value}`"))
}

/// A thread of this process, named by `/proc/thread-self` from inside it.
#[derive(Clone)]
struct Thread(std::path::PathBuf);

impl Thread {
    fn current() -> Thread {
        Thread(std::fs::read_link("/proc/thread-self").unwrap_or_default())
    }

    /// Time on the CPU and context switches (voluntary + involuntary) so far.
    fn usage(&self) -> (Duration, u64) {
        let dir = std::path::Path::new("/proc").join(&self.0);
        let cpu = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse().ok())
            .map_or(Duration::ZERO, Duration::from_nanos);
        let switches = std::fs::read_to_string(dir.join("status"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        (cpu, switches)
    }
}

/// Runs `make` on a runtime of its own, on a thread of its own, and returns what it made.
fn on_own_thread<T: Send + 'static>(
    make: impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>> + Send + 'static,
) -> (T, Thread) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let _ = tx.send((make().await, Thread::current()));
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

/// What one route's downloads measured.
#[derive(Default)]
struct Samples {
    totals: Vec<Duration>,
    firsts: Vec<Duration>,
    /// Time on the CPU per download of the server's, the proxy's and the client's thread.
    cpu: [Duration; 3],
    /// Context switches of the same threads, all downloads together.
    switches: [u64; 3],
}

fn main() {
    let mb = number("--mb", 100);
    let runs = number("--runs", 11);
    let routes: Vec<Route> = arg("--routes", "connect,http,socks5")
        .split(',')
        .map(|name| match name {
            "connect" => Route::Connect,
            "http" => Route::PlainHttp,
            "socks5" => Route::Socks5,
            other => panic!("--routes takes connect, http and socks5, not `{other}`"),
        })
        .collect();
    // The server, the proxy and the client each on a thread of their own, as the three
    // processes they are in use; none waits for another's turn on a shared runtime.
    let (server, server_thread) = on_own_thread(|| Box::pin(server()));
    let (proxy, proxy_thread) = on_own_thread(|| {
        Box::pin(async {
            let policy = EgressPolicy::new()
                .resolve("bench.test", [Ipv4Addr::LOCALHOST.into()])
                .allow_host("bench.test", "bench")
                .and_then(|p| p.allow_address("127.0.0.1", "bench"))
                .unwrap();
            Box::leak(Box::new(EgressProxy::start(policy, None).await.unwrap())).addr()
        })
    });
    let client_thread = Thread::current();
    let threads = [server_thread, proxy_thread, client_thread];
    let usage = || threads.clone().map(|t| t.usage());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let size = mb * 1024 * 1024;
        let all: Vec<Route> = std::iter::once(Route::Direct).chain(routes.iter().copied()).collect();
        for &route in &all {
            download(route, server, proxy, size).await;
        }
        let mut samples: Vec<Samples> = all.iter().map(|_| Samples::default()).collect();
        // Round after round, every route once, so that a change of load on the machine falls
        // on all of them alike; the first route of a round moves along each time.
        for round in 0..runs {
            for k in 0..all.len() {
                let i = (round + k) % all.len();
                let before = usage();
                let total = download(all[i], server, proxy, size).await.1;
                let after = usage();
                let sample = &mut samples[i];
                sample.totals.push(total);
                for t in 0..3 {
                    sample.cpu[t] += after[t].0 - before[t].0;
                    sample.switches[t] += after[t].1 - before[t].1;
                }
                sample.firsts.push(download(all[i], server, proxy, 16).await.0);
            }
        }
        println!(
            "{mb} MB download from a loopback server, {runs} rounds of every route in turn \
             (after one warm-up each); medians, and the CPU time of each thread per download:"
        );
        println!(
            "  {:<22} {:>9} {:>10} {:>8} {:>11}   {:>7} {:>7} {:>7}  {:>14}",
            "route", "time", "rate", "/direct", "first byte", "server", "proxy", "client", "switches s/p/c"
        );
        let direct = median(samples[0].totals.clone());
        for (route, sample) in all.iter().zip(&samples) {
            let total = median(sample.totals.clone());
            let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3 / runs as f64);
            println!(
                "  {:<22} {:>6.1} ms {:>5.0} MB/s {:>7.2}x {:>8.0} µs   {:>7} {:>7} {:>7}  {:>14}",
                route.name(),
                total.as_secs_f64() * 1e3,
                size as f64 / total.as_secs_f64() / 1e6,
                direct.as_secs_f64() / total.as_secs_f64(),
                median(sample.firsts.clone()).as_secs_f64() * 1e6,
                ms(sample.cpu[0]),
                if let Route::Direct = route { "-".to_owned() } else { ms(sample.cpu[1]) },
                ms(sample.cpu[2]),
                sample.switches.map(|n| (n / runs as u64).to_string()).join("/"),
            );
        }
        // Each proxied run against the direct run of its round: steadier than the medians'
        // ratio when the load changes between rounds.
        for (route, sample) in all.iter().zip(&samples).skip(1) {
            let ratios: Vec<f64> = samples[0]
                .totals
                .iter()
                .zip(&sample.totals)
                .map(|(d, p)| d.as_secs_f64() / p.as_secs_f64())
                .collect();
            let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "  {:<22} throughput / direct, per round: median {:.2}x, lowest {:.2}x",
                route.name(),
                median_f64(ratios),
                low
            );
        }
    });
}

include!("../tests/support/read_head.rs");
