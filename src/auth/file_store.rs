//! [`FileTokenStore`]: tokens and registrations in a JSON file only its owner can read
//! (`0600`), for command-line tools such as `mcpctl`, whose tokens must outlive the process.
//!
//! Written whole on every change, to a temporary file in the same directory (created `0600`)
//! that is then renamed over the old one, so that a crash leaves the old file or the new one,
//! never half of either. Read once when opened. A file that cannot be read or written is
//! logged (never its contents) and the store goes on in memory.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{Registration, Secret, TokenStore, Tokens};

/// A [`TokenStore`] in a file readable by its owner only.
///
/// ```
/// use mcp_supervisor::auth::{FileTokenStore, TokenStore, Tokens};
///
/// let dir = std::env::temp_dir().join(format!("mcp-doc-{}", std::process::id()));
/// let path = dir.join("tokens.json");
/// let store = FileTokenStore::open(&path).unwrap();
/// store.save_tokens("https://mcp.example.com/mcp", Tokens::new("https://as.example", "t"));
/// let again = FileTokenStore::open(&path).unwrap();
/// assert!(again.tokens("https://mcp.example.com/mcp").is_some());
/// # std::fs::remove_dir_all(dir).unwrap();
/// ```
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    data: Mutex<Data>,
}

#[derive(Default, Serialize, Deserialize)]
struct Data {
    #[serde(default)]
    tokens: BTreeMap<String, StoredTokens>,
    #[serde(default)]
    registrations: BTreeMap<String, StoredRegistration>,
}

// What is in the file: never shown, so no Debug.
impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens, {} registrations",
            self.tokens.len(),
            self.registrations.len()
        )
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct StoredTokens {
    issuer: String,
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    expires_at: Option<u64>,
    scope: Option<String>,
    #[serde(default)]
    dpop: bool,
}

#[derive(Clone, Serialize, Deserialize)]
struct StoredRegistration {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    auth_method: Option<String>,
}

/// The largest token file read.
const MAX_FILE: u64 = 4 * 1024 * 1024;

impl FileTokenStore {
    /// Opens (or, at the first save, creates) the store at `path`; its directory is created
    /// `0700` if missing. An unreadable or invalid file is an error, not silently replaced.
    pub fn open(path: impl Into<PathBuf>) -> std::io::Result<FileTokenStore> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let data = match std::fs::File::open(&path) {
            Ok(file) => {
                use std::io::Read as _;
                let mut text = Vec::new();
                file.take(MAX_FILE).read_to_end(&mut text)?;
                serde_json::from_slice(&text).map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "the token file is not valid",
                    )
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data::default(),
            Err(e) => return Err(e),
        };
        Ok(FileTokenStore {
            path,
            data: Mutex::new(data),
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn change(&self, f: impl FnOnce(&mut Data)) {
        let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut data);
        if let Err(e) = write(&self.path, &data) {
            tracing::warn!(path = %self.path.display(), error = %e, "the token file could not be written: tokens are kept in memory only");
        }
    }
}

fn write(path: &Path, data: &Data) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(data).map_err(std::io::Error::other)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(&text)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl TokenStore for FileTokenStore {
    fn tokens(&self, server_url: &str) -> Option<Tokens> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let t = data.tokens.get(server_url)?.clone();
        Some(Tokens {
            issuer: t.issuer,
            access_token: Secret::new(t.access_token),
            refresh_token: t.refresh_token.map(Secret::new),
            expires_at: t
                .expires_at
                .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s))),
            scope: t.scope,
            dpop: t.dpop,
        })
    }

    fn save_tokens(&self, server_url: &str, tokens: Tokens) {
        let stored = StoredTokens {
            issuer: tokens.issuer,
            access_token: tokens.access_token.expose().to_owned(),
            refresh_token: tokens.refresh_token.map(|s| s.expose().to_owned()),
            expires_at: tokens.expires_at.map(secs),
            scope: tokens.scope,
            dpop: tokens.dpop,
        };
        self.change(|d| {
            d.tokens.insert(server_url.to_owned(), stored);
        });
    }

    fn clear_tokens(&self, server_url: &str) {
        self.change(|d| {
            d.tokens.remove(server_url);
        });
    }

    fn registration(&self, issuer: &str) -> Option<Registration> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let r = data.registrations.get(issuer)?.clone();
        Some(Registration {
            issuer: r.issuer,
            client_id: r.client_id,
            client_secret: r.client_secret.map(Secret::new),
            auth_method: r.auth_method,
        })
    }

    fn save_registration(&self, issuer: &str, registration: Registration) {
        let stored = StoredRegistration {
            issuer: registration.issuer,
            client_id: registration.client_id,
            client_secret: registration.client_secret.map(|s| s.expose().to_owned()),
            auth_method: registration.auth_method,
        };
        self.change(|d| {
            d.registrations.insert(issuer.to_owned(), stored);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn round_trip_with_owner_only_permissions() {
        let dir = std::env::temp_dir().join(format!("mcp-file-store-{}", std::process::id()));
        let path = dir.join("sub/tokens.json");
        let store = FileTokenStore::open(&path).unwrap();
        let at = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let tokens = Tokens::new("https://as", "access-XYZ")
            .refresh_token("refresh-XYZ")
            .expires_at(at)
            .scope("a b");
        store.save_tokens("https://mcp/mcp", tokens.clone());
        store.save_registration(
            "https://as",
            Registration {
                issuer: "https://as".into(),
                client_id: "c".into(),
                client_secret: Some(Secret::new("secret-XYZ")),
                auth_method: Some("none".into()),
            },
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let again = FileTokenStore::open(&path).unwrap();
        assert_eq!(again.tokens("https://mcp/mcp"), Some(tokens));
        assert_eq!(again.registration("https://as").unwrap().client_id, "c");
        assert!(!format!("{again:?}").contains("XYZ"));
        again.clear_tokens("https://mcp/mcp");
        assert_eq!(
            FileTokenStore::open(&path)
                .unwrap()
                .tokens("https://mcp/mcp"),
            None
        );
        std::fs::write(&path, "garbage").unwrap();
        assert!(FileTokenStore::open(&path).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
