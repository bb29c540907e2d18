//! What admitting a person costs per request: verifying a real provider's RS256 access token
//! with cached keys, beside admitting a configured token (its SHA-256 digest compared with the
//! configured ones: the peer, measured in the same run).
//!
//! ```text
//! bash scripts/oidc-provider.sh install
//! cargo bench -p zhiku-adapters-oidc --bench verify [-- --n 20000]
//! ```
//!
//! The provider (oidc-provider from npm) is started on a free port, a person signs in through
//! it, and the token is verified `n` times on one thread; the keys are fetched once before the
//! clock starts. Prints p50/p99/mean per verification for both and the ratio.

use std::time::Instant;

use sha2::{Digest, Sha256};
use zhiku_adapters_oidc::{OidcSettings, OidcVerifier};
use zhiku_domain::ports::IdentityVerifier;
use zhiku_tests::oidc::{AUDIENCE, OidcProvider};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn timed(n: usize, mut f: impl FnMut()) -> Vec<f64> {
    let mut t: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000usize);
    let Some(p) = OidcProvider::start("bench", "verify") else {
        return;
    };
    p.set_groups("li.lei@corp", &["hr", "eng", "finance"]);
    let token = p.sign_in("li.lei@corp", "http://127.0.0.1:7/");
    let mut s = OidcSettings::new(&p.issuer, AUDIENCE);
    s.user_claim = "email".into();
    let v = OidcVerifier::new(s).unwrap();
    v.verify(&token).expect("the token verifies");

    // The peer: how `zhiku serve` admits a configured token (digest, then a comparison with
    // each of 20 configured digests).
    let configured: Vec<[u8; 32]> = (0..20)
        .map(|i| Sha256::digest(format!("tok-{i}").as_bytes()).into())
        .collect();
    let presented = "tok-19";
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let jwt = timed(n, || {
        std::hint::black_box(v.verify(std::hint::black_box(&token)).unwrap());
    });
    let digest = timed(n, || {
        let d: [u8; 32] = Sha256::digest(std::hint::black_box(presented).as_bytes()).into();
        std::hint::black_box(configured.iter().filter(|c| **c == d).count());
    });
    let mean = |t: &[f64]| t.iter().sum::<f64>() / t.len() as f64;
    println!(
        "admission cost per request, {n} runs each, one thread; load at start: {}",
        load.trim()
    );
    println!("| admission | p50 µs | p99 µs | mean µs |");
    println!("|---|---:|---:|---:|");
    for (name, t) in [
        ("OIDC JWT (RS256, cached keys)", &jwt),
        ("configured token (SHA-256)", &digest),
    ] {
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} |",
            percentile(t, 0.5),
            percentile(t, 0.99),
            mean(t)
        );
    }
    println!(
        "ratio JWT / configured token (p50): {:.1}",
        percentile(&jwt, 0.5) / percentile(&digest, 0.5).max(1e-3)
    );
}
