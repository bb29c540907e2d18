//! People signed in at a real OpenID provider (oidc-provider, started by
//! scripts/oidc-provider.sh) use `zhiku serve` with the provider's tokens: each reads what the
//! documents' readers name them in, by their groups at the provider; writers and operators are
//! groups too; tokens the provider did not issue are refused at the door.

mod support;

use serde_json::{Value, json};
use support::call;
use zhiku_tests::oidc::{AUDIENCE, OidcProvider};

const HR_SECRET: &str = "青松";
const FIN_SECRET: &str = "红杉";

fn kb_with_provider(dir: &std::path::Path, p: &OidcProvider) -> std::path::PathBuf {
    let kb = dir.join("kb");
    support::write(
        &kb,
        "hr/bonus.md",
        &format!(
            "---\nid: bonus\naccess: [group:hr]\n---\n# 年终奖\n\n经理的年终奖为三个月工资，代号{HR_SECRET}。\n"
        ),
    );
    support::write(
        &kb,
        "fin/budget.md",
        &format!(
            "---\nid: budget\naccess: [group:finance, user:boss@corp]\n---\n# 预算\n\n明年的预算是八百万元，代号{FIN_SECRET}。\n"
        ),
    );
    support::write(
        &kb,
        "all/leave.md",
        "---\nid: leave\n---\n# 年假\n\n员工每年有十五天年假。\n",
    );
    support::write(
        &kb,
        "zhiku.toml",
        &format!(
            "embedder = \"hashing\"\n\
             [serve.oidc]\nissuer = \"{}\"\naudience = \"{AUDIENCE}\"\nscopes = [\"default\"]\n\
             user_claim = \"email\"\nwrite_groups = [\"editors\"]\noperator_groups = [\"ops\"]\n\
             client_id = \"zhiku-web\"\n\
             [[serve.tokens]]\nname = \"svc\"\nsha256 = \"{}\"\nscopes = [\"default\"]\n",
            p.issuer,
            zhiku_http::settings::token_digest("tok-svc"),
        ),
    );
    kb
}

fn ids(reply: &Value) -> Vec<String> {
    let mut ids: Vec<String> = reply["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["doc_id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn people_signed_in_at_the_provider_read_what_their_groups_may_read() {
    let Some(p) = OidcProvider::start("identity", "serve") else {
        return;
    };
    p.set_groups("li.lei@corp", &["hr"]);
    p.set_groups("han@corp", &["finance", "editors"]);
    p.set_groups("ops@corp", &["ops"]);
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with_provider(dir.path(), &p);
    let (s, log) = support::start_logged(&kb, "127.0.0.1:0", &[], &[]);
    let redirect = s.url("/");
    let li = p.sign_in("li.lei@corp", &redirect);
    let han = p.sign_in("han@corp", &redirect);
    let ops = p.sign_in("ops@corp", &redirect);
    let boss = p.sign_in("boss@corp", &redirect);
    let search = |token: &str, query: &str| support::lexical_search(&s, token, query);
    let everything = "年终奖 预算 年假 代号";
    let r = search(&li, everything);
    assert_eq!(ids(&r.body), ["bonus", "leave"]);
    assert!(!r.text.contains(FIN_SECRET));
    let r = search(&han, everything);
    assert_eq!(ids(&r.body), ["budget", "leave"]);
    assert!(!r.text.contains(HR_SECRET));
    // Named as a user, without the group.
    assert_eq!(ids(&search(&boss, everything).body), ["budget", "leave"]);
    // A service token reads the scope whole.
    assert_eq!(
        ids(&search("tok-svc", everything).body),
        ["bonus", "budget", "leave"]
    );
    // Documents and originals are held to the same readers.
    for (token, hidden) in [(&li, "budget"), (&han, "bonus")] {
        for path in [
            format!("/v1/documents/{hidden}"),
            format!("/v1/originals/{hidden}"),
        ] {
            let r = call("GET", &s.url(&path), Some(token), None);
            assert_eq!(r.status, 404, "{path}: {}", r.text);
        }
        let list = call("GET", &s.url("/v1/documents?limit=100"), Some(token), None);
        assert!(!list.text.contains(hidden), "{}", list.text);
    }

    // Group membership changes at the provider show at the next sign-in, with no change here.
    p.set_groups("li.lei@corp", &["finance"]);
    let li2 = p.sign_in("li.lei@corp", &redirect);
    assert_eq!(ids(&search(&li2, everything).body), ["budget", "leave"]);

    // Writers are a group: han may add a document, li may not.
    let doc = json!({"id": "memo", "text": "# 备忘\n\n周五开会。"});
    let r = call("POST", &s.url("/v1/documents"), Some(&han), Some(&doc));
    assert!(r.status == 200 || r.status == 201, "{}", r.text);
    let r = call("POST", &s.url("/v1/documents"), Some(&li), Some(&doc));
    assert_eq!(r.status, 403, "{}", r.text);

    // A person sees their own runs; an operator sees everyone's.
    let r = call(
        "POST",
        &s.url("/v1/ask"),
        Some(&li),
        Some(&json!({"question": "年终奖是多少？"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let trace = r.body["trace_id"].as_str().expect("a trace").to_string();
    let path = format!("/v1/traces/{trace}");
    assert_eq!(call("GET", &s.url(&path), Some(&li), None).status, 200);
    assert_eq!(call("GET", &s.url(&path), Some(&han), None).status, 404);
    assert_eq!(call("GET", &s.url(&path), Some(&ops), None).status, 200);

    // Tokens the provider did not issue as valid are refused at the door, saying why.
    let (kid, _) = p.signing_key();
    let forged = {
        use jsonwebtoken::{Algorithm, EncodingKey, Header};
        let mut h = Header::new(Algorithm::RS256);
        h.kid = Some(kid);
        let claims = json!({"iss": p.issuer, "aud": AUDIENCE, "email": "boss@corp",
            "exp": 4_000_000_000u64});
        jsonwebtoken::encode(
            &h,
            &claims,
            &EncodingKey::from_rsa_pem(&p.foreign_key()).unwrap(),
        )
        .unwrap()
    };
    let mut tampered = li.clone();
    tampered.pop();
    tampered.push(if li.ends_with('A') { 'B' } else { 'A' });
    for bad in [forged.as_str(), tampered.as_str(), "a.b.c", "not-a-token"] {
        let r = search_raw(&s, bad);
        assert_eq!(r.status, 401, "{}", r.text);
        assert!(r.www_authenticate.is_some());
        assert!(!r.text.contains(bad), "the refusal quotes the token");
    }
    let r = search_raw(&s, &forged);
    assert_eq!(r.body["error"]["code"], "invalid_token", "{}", r.text);
    let logged = log.text();
    assert!(logged.contains("identity token refused"), "{logged}");
    assert!(!logged.contains(&forged), "the log holds a token");

    // Metrics are labelled by route, status and scope: no person and no document is named.
    let metrics = call("GET", &s.url("/metrics"), None, None);
    assert_eq!(metrics.status, 200, "{}", metrics.text);
    for name in [
        "li.lei",
        "han@corp",
        "ops@corp",
        "boss@corp",
        "bonus",
        "budget",
        "memo",
    ] {
        assert!(!metrics.text.contains(name), "/metrics names {name}");
    }

    // The page learns where to sign in, and may reach the provider's token endpoint.
    let r = call("GET", &s.url("/v1/auth/config"), None, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["client_id"], "zhiku-web");
    assert_eq!(r.body["token_endpoint"], format!("{}/token", p.issuer));
    let page = ureq::get(&s.url("/")).call().unwrap();
    let csp = page.header("content-security-policy").unwrap().to_string();
    assert!(
        csp.contains(&format!("connect-src 'self' {}", p.issuer)),
        "{csp}"
    );
}

fn search_raw(s: &support::Server, token: &str) -> support::Reply {
    call(
        "POST",
        &s.url("/v1/search"),
        Some(token),
        Some(&json!({"query": "预算", "k": 5})),
    )
}

#[test]
fn a_provider_that_cannot_be_reached_is_503_not_a_refusal_and_service_tokens_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let port = zhiku_tests::local::unused_local_port();
    support::write(&kb, "a.md", "# 年假\n\n十五天。\n");
    support::write(
        &kb,
        "zhiku.toml",
        &format!(
            "embedder = \"hashing\"\n[serve.oidc]\nissuer = \"http://127.0.0.1:{port}\"\naudience = \"{AUDIENCE}\"\nscopes = [\"default\"]\n\
             [[serve.tokens]]\nname = \"svc\"\nsha256 = \"{}\"\nscopes = [\"default\"]\n",
            zhiku_http::settings::token_digest("tok-svc"),
        ),
    );
    let (s, _log) = support::start_logged(&kb, "127.0.0.1:0", &[], &[]);
    // Header {"alg":"RS256","kid":"k"}, any payload: the keys must be fetched to decide.
    let jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJ4In0.c2ln";
    let r = search_raw(&s, jwt);
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(search_raw(&s, "tok-svc").status, 200);
    assert_eq!(search_raw(&s, "unknown").status, 401);
    assert_eq!(
        call(
            "POST",
            &s.url("/v1/search"),
            None,
            Some(&json!({"query": "x"}))
        )
        .status,
        401
    );
}
