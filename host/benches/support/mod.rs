//! A tiny benchmark harness: repeat, take the median and the 90th percentile, print a
//! Markdown row. Every figure is reported beside a floor measured in the same run.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Timing summary of one measured operation.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// Median duration.
    pub median: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// Number of samples.
    pub samples: usize,
}

/// Runs `op` `warmup` times unmeasured, then `samples` times measured.
pub fn measure(warmup: usize, samples: usize, mut op: impl FnMut()) -> Summary {
    for _ in 0..warmup {
        op();
    }
    let times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            op();
            start.elapsed()
        })
        .collect();
    summarize(times)
}

/// The median and 90th percentile of `times`.
fn summarize(mut times: Vec<Duration>) -> Summary {
    times.sort();
    Summary {
        median: times[times.len() / 2],
        p90: times[times.len() * 9 / 10],
        samples: times.len(),
    }
}

/// Runs every op of `ops` once per round, `warmup` rounds unmeasured, then `samples` rounds
/// measured; one summary per op. Interleaving keeps their ratios honest when the machine's
/// speed drifts during the run.
pub fn measure_interleaved(warmup: usize, samples: usize, ops: &mut [&mut dyn FnMut()]) -> Vec<Summary> {
    for _ in 0..warmup {
        ops.iter_mut().for_each(|op| op());
    }
    let mut times = vec![Vec::with_capacity(samples); ops.len()];
    for _ in 0..samples {
        for (op, times) in ops.iter_mut().zip(&mut times) {
            let start = Instant::now();
            op();
            times.push(start.elapsed());
        }
    }
    times.into_iter().map(summarize).collect()
}

/// Measures a batch of `batch` calls per sample and reports the time per call.
pub fn measure_per_call(samples: usize, batch: usize, mut op: impl FnMut()) -> Summary {
    let whole = measure(2, samples, || {
        for _ in 0..batch {
            op();
        }
    });
    Summary {
        median: whole.median / batch as u32,
        p90: whole.p90 / batch as u32,
        samples: samples * batch,
    }
}

/// Formats a duration with a unit that suits it.
pub fn fmt(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

/// Prints the table header.
pub fn header(title: &str) {
    println!("\n### {title}\n");
    println!("| measurement | median | p90 | samples | × floor |");
    println!("|---|---|---|---|---|");
}

/// Prints one row, with its ratio to `floor`.
pub fn row(name: &str, s: Summary, floor: Summary) {
    let ratio = s.median.as_secs_f64() / floor.median.as_secs_f64();
    println!(
        "| {name} | {} | {} | {} | {ratio:.2} |",
        fmt(s.median),
        fmt(s.p90),
        s.samples
    );
}
