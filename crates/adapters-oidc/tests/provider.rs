//! The OIDC verifier against a real OpenID provider (oidc-provider, started per test by
//! scripts/oidc-provider.sh): people signed in through it are verified with their groups; tokens
//! it did not issue as valid are refused, whatever key signed them; key rotation needs no
//! restart; a withdrawn key stops verifying.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use zhiku_adapters_oidc::{OidcSettings, OidcVerifier};
use zhiku_domain::ports::{IdentityError, IdentityVerifier};
use zhiku_tests::oidc::{AUDIENCE, OidcProvider};

const REDIRECT: &str = "http://127.0.0.1:7/";

fn verifier(p: &OidcProvider, tune: impl FnOnce(&mut OidcSettings)) -> OidcVerifier {
    let mut s = OidcSettings::new(&p.issuer, AUDIENCE);
    s.user_claim = "email".into();
    tune(&mut s);
    OidcVerifier::new(s).unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(p: &OidcProvider) -> Value {
    json!({"iss": p.issuer, "aud": AUDIENCE, "sub": "li.lei@corp", "email": "li.lei@corp",
           "groups": ["hr"], "iat": now(), "exp": now() + 300})
}

fn sign(alg: Algorithm, kid: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn refused(v: &OidcVerifier, token: &str, what: &str) -> String {
    match v.verify(token) {
        Err(IdentityError::Refused(reason)) => {
            assert!(
                !reason.contains(token),
                "{what}: the reason quotes the token"
            );
            reason
        }
        other => panic!("{what}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_person_signed_in_at_the_provider_is_verified_with_their_groups() {
    let Some(p) = OidcProvider::start("oidc", "signed_in") else {
        return;
    };
    p.set_groups("li.lei@corp", &["hr", "eng"]);
    let token = p.sign_in("li.lei@corp", REDIRECT);
    let v = verifier(&p, |_| {});
    let id = v.verify(&token).unwrap();
    assert_eq!(id.principal.user(), "li.lei@corp");
    assert_eq!(
        id.principal.groups().iter().collect::<Vec<_>>(),
        ["eng", "hr"]
    );
    assert_eq!(id.issuer, p.issuer);
    assert!(id.expires_at > now());
    // Group membership is read at sign-in: a changed membership shows in the next token.
    p.set_groups("li.lei@corp", &["finance"]);
    let later = v.verify(&p.sign_in("li.lei@corp", REDIRECT)).unwrap();
    assert!(later.principal.groups().contains("finance"));
    assert!(!later.principal.groups().contains("hr"));
    // Another audience, issuer or user claim configured: the same real token is refused.
    for (what, tune) in [
        (
            "audience",
            Box::new(|s: &mut OidcSettings| s.audiences = vec!["urn:other".into()])
                as Box<dyn FnOnce(&mut OidcSettings)>,
        ),
        (
            "user claim",
            Box::new(|s: &mut OidcSettings| s.user_claim = "upn".into()),
        ),
        (
            "algorithms",
            Box::new(|s: &mut OidcSettings| s.algorithms = vec!["ES256".into()]),
        ),
    ] {
        refused(&verifier(&p, tune), &token, what);
    }
    // The issuer is checked against discovery before anything is verified.
    let mut s = OidcSettings::new(&format!("{}/", p.issuer), AUDIENCE);
    s.user_claim = "email".into();
    match OidcVerifier::new(s).unwrap().verify(&token) {
        Err(IdentityError::Unavailable { message, .. }) => assert!(message.contains("issuer")),
        other => panic!("a mismatched issuer: {other:?}"),
    }
}

#[test]
fn tokens_the_provider_did_not_issue_as_valid_are_refused() {
    let Some(p) = OidcProvider::start("oidc", "forged") else {
        return;
    };
    let v = verifier(&p, |s| s.leeway = Duration::from_secs(5));
    let (kid, pem) = p.signing_key();
    let real = EncodingKey::from_rsa_pem(&pem).unwrap();
    // Control: a token with the right claims, signed by the provider's own key, passes.
    v.verify(&sign(Algorithm::RS256, Some(&kid), &claims(&p), &real))
        .expect("a well-formed token signed with the provider's key");

    let with = |k: &str, val: Value| {
        let mut c = claims(&p);
        c[k] = val;
        c
    };
    let without = |k: &str| {
        let mut c = claims(&p);
        c.as_object_mut().unwrap().remove(k);
        c
    };
    let cases = [
        ("expired", with("exp", json!(now() - 60))),
        ("not yet valid", with("nbf", json!(now() + 120))),
        ("wrong audience", with("aud", json!("urn:other"))),
        ("wrong audiences", with("aud", json!(["urn:a", "urn:b"]))),
        ("wrong issuer", with("iss", json!("http://127.0.0.1:1"))),
        ("no expiry", without("exp")),
        ("no audience", without("aud")),
        ("no issuer", without("iss")),
        ("no user", without("email")),
        ("a user that is no name", with("email", json!(" "))),
        ("a user that is a number", with("email", json!(42))),
    ];
    for (what, c) in &cases {
        let reason = refused(&v, &sign(Algorithm::RS256, Some(&kid), c, &real), what);
        eprintln!("{what}: {reason}");
    }
    // Within the clock skew an expired token still passes (and just beyond it does not).
    v.verify(&sign(
        Algorithm::RS256,
        Some(&kid),
        &with("exp", json!(now() - 2)),
        &real,
    ))
    .expect("expired two seconds ago, within 5 s of skew");

    // Signed by a key the provider never published, under its key ID or another.
    let foreign = EncodingKey::from_rsa_pem(&p.foreign_key()).unwrap();
    for k in [Some(kid.as_str()), Some("not-published"), None] {
        refused(
            &v,
            &sign(Algorithm::RS256, k, &claims(&p), &foreign),
            "forged",
        );
    }
    // MACed with the provider's public key as the shared secret (HS/RS confusion), in every
    // form an attacker could take it in.
    let public = p.public_key_pem();
    let jwks = ureq::get(&format!("{}/jwks", p.issuer))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    for secret in [public.as_slice(), jwks.as_bytes()] {
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let t = sign(
                alg,
                Some(&kid),
                &claims(&p),
                &EncodingKey::from_secret(secret).unwrap(),
            );
            refused(&v, &t, "HS with the public key");
        }
    }
    // Unsigned (alg none, in any spelling), a signature stripped, a payload swapped.
    let b64 = |v: &Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let body = b64(&claims(&p));
    for alg in ["none", "None", "NONE", ""] {
        let h = b64(&json!({"alg": alg, "typ": "JWT", "kid": kid}));
        refused(&v, &format!("{h}.{body}."), "alg none");
        refused(&v, &format!("{h}.{body}.c2ln"), "alg none with a signature");
    }
    let good = sign(Algorithm::RS256, Some(&kid), &claims(&p), &real);
    let (head, rest) = good.split_once('.').unwrap();
    let sig = rest.split_once('.').unwrap().1;
    refused(&v, &format!("{head}.{body}."), "signature stripped");
    let admin = b64(&with("groups", json!(["hr", "admin"])));
    refused(&v, &format!("{head}.{admin}.{sig}"), "payload swapped");
}

#[test]
fn rotated_keys_verify_without_a_restart_and_withdrawn_keys_stop() {
    let Some(p) = OidcProvider::start("oidc", "rotation") else {
        return;
    };
    let v = verifier(&p, |s| {
        s.keys_max_age = Duration::from_secs(2);
        s.refresh_interval = Duration::from_millis(500);
    });
    let before = p.sign_in("li.lei@corp", REDIRECT);
    v.verify(&before).unwrap();

    // Rollover: the provider signs with a new key and still publishes the old one.
    let new_kid = p.rotate();
    let after = p.sign_in("li.lei@corp", REDIRECT);
    let header = jsonwebtoken::decode_header(&after).unwrap();
    assert_eq!(header.kid.as_deref(), Some(new_kid.as_str()));
    std::thread::sleep(Duration::from_millis(600));
    v.verify(&after)
        .expect("a token of the new key, fetched on its unknown ID");
    v.verify(&before).expect("the old key is still published");

    // Withdrawal: only a newer key is published; once the cached keys are older than their
    // maximum age, a token of a withdrawn key is refused.
    p.retire();
    let newest = p.sign_in("li.lei@corp", REDIRECT);
    std::thread::sleep(Duration::from_millis(2_200));
    v.verify(&newest).unwrap();
    refused(&v, &before, "a withdrawn key");
    refused(&v, &after, "a withdrawn key");
}

#[test]
fn unknown_key_ids_fetch_the_keys_at_most_once_per_interval_and_an_outage_is_not_a_refusal() {
    let Some(p) = OidcProvider::start("oidc", "refresh") else {
        return;
    };
    let v = verifier(&p, |s| s.refresh_interval = Duration::from_secs(60));
    let token = p.sign_in("li.lei@corp", REDIRECT);
    v.verify(&token).unwrap();
    let (_, pem) = p.signing_key();
    let real = EncodingKey::from_rsa_pem(&pem).unwrap();
    for i in 0..50 {
        refused(
            &v,
            &sign(
                Algorithm::RS256,
                Some(&format!("made-up-{i}")),
                &claims(&p),
                &real,
            ),
            "unknown kid",
        );
    }
    assert!(
        !v.refresh_keys().unwrap(),
        "the unknown IDs fetched once, and the interval has not passed"
    );
    // The provider goes away: cached keys still decide.
    drop(p);
    v.verify(&token)
        .expect("cached keys verify while the provider is down");

    // A verifier that never reached its provider reports it unavailable, never refused.
    let port = zhiku_tests::local::unused_local_port();
    let lost = OidcVerifier::new(OidcSettings::new(
        &format!("http://127.0.0.1:{port}"),
        AUDIENCE,
    ))
    .unwrap();
    match lost.verify(&token) {
        Err(e @ IdentityError::Unavailable { .. }) => assert!(e.is_temporary()),
        other => panic!("no provider: {other:?}"),
    }
}
