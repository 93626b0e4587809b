//! Truncation cost from 1 KiB to 256 MiB: `truncate_text`, and the same cut streamed in 64 KiB
//! chunks through `TruncationStream` (as text, and as raw bytes it decodes the way `bash` feeds
//! it), against a naive `str::lines` implementation.
//!
//! Run with `cargo bench -p tool-runtime --bench truncation`. Set `TRUNCATION_BENCH_MAX_MIB` (for
//! example to 16) to skip the larger inputs.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tool_runtime::spec::TruncationDirection;
use tool_runtime::truncate::{TruncationLimits, TruncationStream, truncate_text};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const SIZES: [usize; 6] = [KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB, 256 * MIB];
/// The chunk size of the streamed form: what `bash` reads from its pipe at a time.
const CHUNK: usize = 64 * KIB;

/// Log-like text: lines of 20 to 139 bytes, each with a two-byte character.
fn block() -> String {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut text = String::with_capacity(MIB + 256);
    let mut n = 0u64;
    while text.len() < MIB {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = 20 + (state % 120) as usize;
        n += 1;
        let mut line = format!("{n:>6} ok caf\u{e9} ");
        while line.len() < len {
            line.push((b'a' + (line.len() % 26) as u8) as char);
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// `size` bytes of log-like text, cut on a character boundary.
fn input(block: &str, size: usize) -> String {
    let mut text = block.repeat(size.div_ceil(block.len()));
    let mut end = size.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// What a straightforward implementation does: split everything into lines, then keep lines
/// from one end while both limits allow.
fn naive(text: &str, limits: &TruncationLimits) -> (String, usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let total_lines = lines.len();
    let (max_lines, max_bytes) = (limits.max_lines, limits.max_bytes);
    let text = match limits.direction {
        TruncationDirection::Head => keep(lines.iter().copied(), max_lines, max_bytes).join("\n"),
        TruncationDirection::Tail => {
            let mut kept = keep(lines.iter().rev().copied(), max_lines, max_bytes);
            kept.reverse();
            kept.join("\n")
        }
        TruncationDirection::Middle => {
            let head = keep(lines.iter().copied(), max_lines - max_lines / 2, max_bytes - max_bytes / 2);
            let mut tail = keep(lines.iter().rev().copied(), max_lines / 2, max_bytes / 2);
            tail.reverse();
            format!("{}\n[...]\n{}", head.join("\n"), tail.join("\n"))
        }
    };
    (text, total_lines, lines.iter().map(|l| l.len()).sum())
}

/// Lines from `lines` while both limits allow.
fn keep<'a>(lines: impl Iterator<Item = &'a str>, max_lines: usize, max_bytes: usize) -> Vec<&'a str> {
    let mut kept = Vec::new();
    let mut bytes = 0;
    for line in lines {
        if kept.len() == max_lines || bytes + line.len() + 1 > max_bytes {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    kept
}

/// `text` in chunks of about [`CHUNK`] bytes, each ending on a character boundary.
fn text_chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (chunk, after) = rest.split_at(rest.ceil_char_boundary(CHUNK.min(rest.len())));
        rest = after;
        Some(chunk)
    })
}

fn label(size: usize) -> String {
    if size >= MIB { format!("{}MiB", size / MIB) } else { format!("{}KiB", size / KIB) }
}

fn max_size() -> usize {
    std::env::var("TRUNCATION_BENCH_MAX_MIB")
        .ok()
        .and_then(|mib| mib.parse::<usize>().ok())
        .map_or(usize::MAX, |mib| mib * MIB)
}

fn bench(c: &mut Criterion) {
    let block = block();
    for size in SIZES.into_iter().filter(|&size| size <= max_size()) {
        let text = input(&block, size);
        let big = size >= 16 * MIB;
        for (name, direction) in [
            ("head", TruncationDirection::Head),
            ("tail", TruncationDirection::Tail),
            ("middle", TruncationDirection::Middle),
        ] {
            let limits = TruncationLimits::default().with_direction(direction);
            let mut group = c.benchmark_group(name);
            group.throughput(Throughput::Bytes(size as u64));
            group.sample_size(if big { 10 } else { 30 });
            group.warm_up_time(Duration::from_millis(if big { 500 } else { 300 }));
            group.measurement_time(Duration::from_secs(if big { 3 } else { 1 }));
            group.bench_with_input(BenchmarkId::new("ours", label(size)), &text, |b, text| {
                b.iter(|| {
                    let truncated = truncate_text(black_box(text), &limits);
                    black_box((truncated.text.len(), truncated.info.total_lines))
                })
            });
            group.bench_with_input(BenchmarkId::new("stream", label(size)), &text, |b, text| {
                b.iter(|| {
                    let mut stream = TruncationStream::new(limits);
                    for chunk in text_chunks(black_box(text)) {
                        stream.push_str(chunk);
                    }
                    let truncated = stream.finish();
                    black_box((truncated.text.len(), truncated.info.total_lines))
                })
            });
            group.bench_with_input(BenchmarkId::new("stream_bytes", label(size)), &text, |b, text| {
                b.iter(|| {
                    let mut stream = TruncationStream::new(limits);
                    for chunk in black_box(text).as_bytes().chunks(CHUNK) {
                        black_box(stream.push_bytes(chunk));
                    }
                    let truncated = stream.finish();
                    black_box((truncated.text.len(), truncated.info.total_lines))
                })
            });
            group.bench_with_input(BenchmarkId::new("naive_lines", label(size)), &text, |b, text| {
                b.iter(|| {
                    let (kept, total_lines, _) = naive(black_box(text), &limits);
                    black_box((kept.len(), total_lines))
                })
            });
            group.finish();
        }
        // The one full scan a cut needs: the total line count for the metadata.
        let mut group = c.benchmark_group("count_lines");
        group.throughput(Throughput::Bytes(size as u64));
        group.sample_size(if big { 10 } else { 30 });
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(1));
        group.bench_with_input(BenchmarkId::new("memchr", label(size)), &text, |b, text| {
            b.iter(|| memchr::memchr_iter(b'\n', black_box(text).as_bytes()).count())
        });
        group.bench_with_input(BenchmarkId::new("str_lines", label(size)), &text, |b, text| {
            b.iter(|| black_box(text).lines().count())
        });
        // What reading raw bytes as text costs at least, streamed or not.
        group.bench_with_input(BenchmarkId::new("utf8_validation", label(size)), &text, |b, text| {
            b.iter(|| std::str::from_utf8(black_box(text).as_bytes()).is_ok())
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
