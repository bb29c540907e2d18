//! A real OpenID Connect provider for a test: `oidc-provider` (npm) started by
//! `scripts/oidc-provider.sh` on a free loopback port with its own keys, stopped when dropped;
//! and a person's sign-in through it (authorization code + PKCE, as a browser does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The audience the provider issues access tokens for.
pub const AUDIENCE: &str = "urn:zhiku";
/// The provider's one client: a public client (no secret) of the web page.
pub const CLIENT_ID: &str = "zhiku-web";

/// A running provider, stopped on drop.
#[derive(Debug)]
pub struct OidcProvider {
    /// The issuer URL (`http://127.0.0.1:PORT`).
    pub issuer: String,
    port: u16,
    home: tempfile::TempDir,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

impl OidcProvider {
    /// Starts a provider for test `suite::test`. Without node or the npm package it says
    /// `SKIPPED` with what to run and gives `None`, except under `ZHIKU_REQUIRE_OIDC=1` (set by
    /// `scripts/check`), where that is a failure.
    pub fn start(suite: &str, test: &str) -> Option<Self> {
        let installed = repo()
            .join("tests/oidc/node_modules/oidc-provider")
            .is_dir()
            && Command::new("node").arg("--version").output().is_ok();
        if !installed {
            if std::env::var("ZHIKU_REQUIRE_OIDC").as_deref() == Ok("1") {
                panic!("ZHIKU_REQUIRE_OIDC=1 but oidc-provider is not installed ({suite}::{test})");
            }
            eprintln!(
                "SKIPPED {suite}::{test}: run `bash scripts/oidc-provider.sh install` (node and oidc-provider from npm) to test against a real OpenID provider"
            );
            return None;
        }
        let home = tempfile::tempdir().expect("a provider home");
        let port = crate::local::unused_local_port();
        let provider = Self {
            issuer: format!("http://127.0.0.1:{port}"),
            port,
            home,
        };
        let issuer = provider.script("start");
        assert_eq!(issuer, provider.issuer);
        Some(provider)
    }

    fn script(&self, command: &str) -> String {
        let out = Command::new("bash")
            .arg(repo().join("scripts/oidc-provider.sh"))
            .arg(command)
            .env("ZHIKU_OIDC_HOME", self.home.path())
            .env("ZHIKU_OIDC_PORT", self.port.to_string())
            .output()
            .expect("running scripts/oidc-provider.sh");
        assert!(
            out.status.success(),
            "oidc-provider.sh {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// Sets the groups the provider gives `user` from their next sign-in on.
    pub fn set_groups(&self, user: &str, groups: &[&str]) {
        let file = self.home.path().join("users.json");
        let mut users: BTreeMap<String, serde_json::Value> = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        users.insert(user.into(), serde_json::json!({ "groups": groups }));
        std::fs::write(&file, serde_json::to_vec(&users).unwrap()).expect("writing users.json");
    }

    /// Signs with a new key from now on, keeping the old one published; the new key ID.
    pub fn rotate(&self) -> String {
        self.script("rotate")
    }

    /// Publishes only a new key (the old ones withdrawn); the new key ID.
    pub fn retire(&self) -> String {
        self.script("retire")
    }

    /// The newest signing key: its ID and private key (PKCS#8 PEM), to sign tokens the provider
    /// did not issue with a key it publishes.
    pub fn signing_key(&self) -> (String, Vec<u8>) {
        let jwks: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.home.path().join("jwks.json")).unwrap())
                .unwrap();
        let kid = jwks["keys"][0]["kid"].as_str().unwrap().to_string();
        let pem = std::fs::read(self.home.path().join(format!("keys/{kid}.pem"))).unwrap();
        (kid, pem)
    }

    /// The public half of the newest key (SPKI PEM), which anyone can read from the provider.
    pub fn public_key_pem(&self) -> Vec<u8> {
        let (kid, _) = self.signing_key();
        std::fs::read(self.home.path().join(format!("keys/{kid}.pub.pem"))).unwrap()
    }

    /// A key the provider never published: its private key (PKCS#8 PEM), for forged tokens.
    pub fn foreign_key(&self) -> Vec<u8> {
        let elsewhere = tempfile::tempdir().unwrap();
        let out = Command::new("node")
            .arg(repo().join("tests/oidc/provider.mjs"))
            .arg("keygen")
            .arg(elsewhere.path())
            .output()
            .expect("node");
        let kid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        std::fs::read(elsewhere.path().join(format!("keys/{kid}.pem"))).unwrap()
    }

    /// Signs `user` in as a browser would (authorization code with PKCE, redirected to
    /// `redirect_uri`, a loopback URL) and gives the access token the provider issues.
    pub fn sign_in(&self, user: &str, redirect_uri: &str) -> String {
        let agent = ureq::AgentBuilder::new().redirects(0).build();
        let verifier = URL_SAFE_NO_PAD.encode(rand_bytes());
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let mut cookies: BTreeMap<String, String> = BTreeMap::new();
        let mut url = format!(
            "{}/auth?client_id={CLIENT_ID}&response_type=code&scope=openid%20email%20groups&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&state=st&login_hint={}",
            self.issuer,
            encode(redirect_uri),
            encode(user)
        );
        for _ in 0..10 {
            if url.starts_with(redirect_uri) {
                let code = url
                    .split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix("code="))
                    .unwrap_or_else(|| panic!("no code in {url}"));
                let reply: serde_json::Value = agent
                    .post(&format!("{}/token", self.issuer))
                    .send_form(&[
                        ("grant_type", "authorization_code"),
                        ("code", code),
                        ("client_id", CLIENT_ID),
                        ("code_verifier", &verifier),
                        ("redirect_uri", redirect_uri),
                    ])
                    .expect("the token endpoint")
                    .into_json()
                    .unwrap();
                return reply["access_token"]
                    .as_str()
                    .expect("an access token")
                    .into();
            }
            let cookie = cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let response = agent
                .get(&url)
                .set("Cookie", &cookie)
                .call()
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            for set in response.all("set-cookie") {
                if let Some((k, v)) = set.split(';').next().and_then(|kv| kv.split_once('=')) {
                    cookies.insert(k.trim().into(), v.trim().into());
                }
            }
            let next = response.header("location").unwrap_or_else(|| {
                panic!("{url} answered {} without a redirect", response.status())
            });
            url = if next.starts_with('/') {
                format!("{}{next}", self.issuer)
            } else {
                next.to_string()
            };
        }
        panic!("the sign-in did not reach {redirect_uri}");
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo().join("scripts/oidc-provider.sh"))
            .arg("stop")
            .env("ZHIKU_OIDC_HOME", self.home.path())
            .env("ZHIKU_OIDC_PORT", self.port.to_string())
            .output();
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// 32 bytes no other sign-in shares (a PKCE verifier needs uniqueness here, not secrecy).
fn rand_bytes() -> [u8; 32] {
    let seed = format!(
        "{:?} {} {:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        std::thread::current().id()
    );
    Sha256::digest(seed.as_bytes()).into()
}
