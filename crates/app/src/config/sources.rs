//! `[[sources]]`: where documents come from besides the knowledge-base folder (a git
//! repository, a web site, a WebDAV share), each synced into `sources/<name>/` of the folder.

use serde::Deserialize;
use zhiku_domain::{Scope, TimeToLive};

/// The kind of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A git repository's branch or tag.
    Git,
    /// A web site, crawled.
    Web,
    /// A WebDAV share (Nextcloud, ownCloud).
    Webdav,
}

/// One `[[sources]]` table, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceTable {
    /// Its name: the folder `sources/<name>/` it is synced into (a-z, 0-9, `-`, `_`).
    pub name: String,
    /// `git`, `web` or `webdav`.
    pub kind: SourceKind,
    /// git: what git fetches from (URL or path); webdav: the shared folder's URL.
    #[serde(default)]
    pub url: Option<String>,
    /// git: the branch (default `main`).
    #[serde(default)]
    pub branch: Option<String>,
    /// git: a tag instead of a branch.
    #[serde(default)]
    pub tag: Option<String>,
    /// git: folders of the repository to read (default: all of it).
    #[serde(default)]
    pub paths: Vec<String>,
    /// git: a file's URL at a commit, with `{commit}`, `{path}` and `{ref}`.
    #[serde(default)]
    pub permalink: Option<String>,
    /// web: where the crawl starts.
    #[serde(default)]
    pub start: Vec<String>,
    /// web: sitemaps listing pages.
    #[serde(default)]
    pub sitemaps: Vec<String>,
    /// web: only URLs starting with this are crawled (default: the first start URL's folder).
    #[serde(default)]
    pub prefix: Option<String>,
    /// web: most pages and documents one sync asks for (default 10,000).
    #[serde(default)]
    pub max_pages: Option<usize>,
    /// web: least milliseconds between two requests (default 200; robots.txt's Crawl-delay
    /// when longer).
    #[serde(default)]
    pub rate_ms: Option<u64>,
    /// webdav: the user (Basic authentication).
    #[serde(default)]
    pub user: Option<String>,
    /// webdav: the variable holding the password or app token.
    #[serde(default)]
    pub password_env: Option<String>,
    /// The scope of every document of the source, whatever the documents say of themselves.
    #[serde(default)]
    pub scope: Option<String>,
    /// The readers of every document of the source (`group:hr`, `user:li@corp`), whatever the
    /// documents say of themselves.
    #[serde(default)]
    pub readers: Vec<String>,
    /// How often `serve` syncs it (`30m`, `1h`, `1d`; default `1h`).
    #[serde(default)]
    pub every: Option<String>,
    /// How long an item the source no longer holds stays (`0`: it leaves with the sync that
    /// finds it gone, the default for git and webdav; web: `1d`).
    #[serde(default)]
    pub gone_after: Option<String>,
    /// One request's (or git command's) deadline, in milliseconds (default 60,000; git 600,000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl SourceTable {
    /// Checks what can be checked without reaching the source.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        if !zhiku_domain::ports::is_source_name(name) {
            return Err(format!(
                "[[sources]] name {name:?} must be 1-64 of a-z, 0-9, - and _"
            ));
        }
        let only = |what: &str, set: bool, kinds: &str| {
            if set {
                Err(format!(
                    "[[sources]] {name}: {what} applies to {kinds} sources only"
                ))
            } else {
                Ok(())
            }
        };
        match self.kind {
            SourceKind::Git => {
                if self.url.as_deref().is_none_or(str::is_empty) {
                    return Err(format!("[[sources]] {name}: a git source needs url"));
                }
                if self.branch.is_some() && self.tag.is_some() {
                    return Err(format!(
                        "[[sources]] {name}: name a branch or a tag, not both"
                    ));
                }
            }
            SourceKind::Web => {
                if self.start.is_empty() && self.sitemaps.is_empty() {
                    return Err(format!(
                        "[[sources]] {name}: a web source needs start URLs or sitemaps"
                    ));
                }
            }
            SourceKind::Webdav => {
                if self.url.as_deref().is_none_or(str::is_empty) {
                    return Err(format!("[[sources]] {name}: a webdav source needs url"));
                }
            }
        }
        let git = self.kind == SourceKind::Git;
        only("branch", self.branch.is_some() && !git, "git")?;
        only("tag", self.tag.is_some() && !git, "git")?;
        only("paths", !self.paths.is_empty() && !git, "git")?;
        only("permalink", self.permalink.is_some() && !git, "git")?;
        let web = self.kind == SourceKind::Web;
        only("start", !self.start.is_empty() && !web, "web")?;
        only("sitemaps", !self.sitemaps.is_empty() && !web, "web")?;
        only("prefix", self.prefix.is_some() && !web, "web")?;
        only("max_pages", self.max_pages.is_some() && !web, "web")?;
        only("rate_ms", self.rate_ms.is_some() && !web, "web")?;
        let dav = self.kind == SourceKind::Webdav;
        only("user", self.user.is_some() && !dav, "webdav")?;
        only(
            "password_env",
            self.password_env.is_some() && !dav,
            "webdav",
        )?;
        if let Some(s) = &self.scope {
            Scope::new(s.as_str()).map_err(|e| format!("[[sources]] {name}: scope: {e}"))?;
        }
        for r in &self.readers {
            zhiku_domain::Reader::new(r.trim())
                .map_err(|e| format!("[[sources]] {name}: readers: {e}"))?;
        }
        self.every_secs()?;
        self.gone_after_secs()?;
        Ok(())
    }

    /// Seconds between two syncs in `serve`.
    pub fn every_secs(&self) -> Result<u64, String> {
        span(self.every.as_deref().unwrap_or("1h"), &self.name, "every")
    }

    /// Seconds an item the source no longer holds stays.
    pub fn gone_after_secs(&self) -> Result<u64, String> {
        let default = if self.kind == SourceKind::Web {
            "1d"
        } else {
            "0"
        };
        match self.gone_after.as_deref().unwrap_or(default).trim() {
            "0" | "0s" => Ok(0),
            text => span(text, &self.name, "gone_after"),
        }
    }
}

fn span(text: &str, name: &str, key: &str) -> Result<u64, String> {
    TimeToLive::parse(text)
        .map(TimeToLive::secs)
        .map_err(|e| format!("[[sources]] {name}: {key}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> SourceTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn each_kind_needs_its_keys_and_refuses_the_others() {
        let git =
            table("name = \"handbook\"\nkind = \"git\"\nurl = \"https://git.example/h.git\"\n");
        assert!(git.check().is_ok());
        assert_eq!(git.gone_after_secs(), Ok(0));
        assert_eq!(git.every_secs(), Ok(3600));
        let web = table(
            "name = \"wiki\"\nkind = \"web\"\nstart = [\"https://wiki.example/\"]\nevery = \"30m\"\n",
        );
        assert!(web.check().is_ok());
        assert_eq!(web.gone_after_secs(), Ok(86_400));
        for bad in [
            "name = \"Bad Name\"\nkind = \"git\"\nurl = \"x\"\n",
            "name = \"a\"\nkind = \"git\"\n",
            "name = \"a\"\nkind = \"web\"\n",
            "name = \"a\"\nkind = \"webdav\"\nurl = \"https://d/\"\nbranch = \"main\"\n",
            "name = \"a\"\nkind = \"git\"\nurl = \"x\"\nbranch = \"main\"\ntag = \"v1\"\n",
            "name = \"a\"\nkind = \"git\"\nurl = \"x\"\nreaders = [\"nobody\"]\n",
            "name = \"a\"\nkind = \"git\"\nurl = \"x\"\nevery = \"soon\"\n",
        ] {
            assert!(table(bad).check().is_err(), "{bad}");
        }
        assert!(toml::from_str::<SourceTable>("name = \"a\"\nkind = \"ftp\"\n").is_err());
    }
}
