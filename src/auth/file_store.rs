//! [`FileTokenStore`]: tokens and registrations in a JSON file only its owner can read
//! (`0600`), for command-line tools such as `mcpctl`, whose tokens must outlive the process.
//!
//! Written whole on every change, to a temporary file in the same directory that is then
//! renamed over the old one, so that a crash leaves the old file or the new one, never half of
//! either. The temporary file is a new one with a random name, created `0600` with `O_EXCL |
//! O_NOFOLLOW`: nothing already there — a file, or a link planted to make us write the tokens
//! elsewhere — is ever opened in its place. The directory must be the user's own and closed to
//! others (no read or write for group or others): one another user can list or write to could
//! show or swap the file, so such a directory is refused when the store is opened, never
//! changed behind the user's back. Read once when opened. A file that cannot be read or written
//! is logged (never its contents) and the store goes on in memory.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{IssuerBinding, Registration, Secret, TokenStore, Tokens};

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
    /// Server URL -> the issuer its configured credentials are bound to.
    #[serde(default)]
    bindings: BTreeMap<String, StoredBinding>,
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
struct StoredBinding {
    client_id: String,
    issuer: String,
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
    /// `0700` if missing. An unreadable or invalid file is an error, not silently replaced, and
    /// so is a directory that is not the user's own or that others may read or write
    /// (`PermissionDenied`, saying how to fix it).
    pub fn open(path: impl Into<PathBuf>) -> std::io::Result<FileTokenStore> {
        let path = path.into();
        let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir,
            None => Path::new("."),
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        check_private(dir)?;
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

/// Group and others may neither list nor change the directory. (Search alone, `--x`, lets
/// them reach only names they know: the file itself is `0600`. A directory of another user's
/// that we may enter is group-readable or we are root.)
fn check_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(dir)?;
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "the token directory {} {why}: tokens are kept only in a directory others \
                 cannot read or write",
                dir.display()
            ),
        ))
    };
    let mode = meta.mode() & 0o777;
    if mode & 0o066 != 0 {
        return refuse(format!(
            "can be read or written by other users (mode {mode:04o}; `chmod 700` it)"
        ));
    }
    Ok(())
}

/// Temporary names tried before giving up (another writer's leftovers have other names).
const TEMP_TRIES: usize = 4;

fn write(path: &Path, data: &Data) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(data).map_err(std::io::Error::other)?;
    let name = path
        .file_name()
        .map_or_else(|| "tokens".into(), |n| n.to_string_lossy().into_owned());
    let mut last = None;
    for _ in 0..TEMP_TRIES {
        let tmp = path.with_file_name(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
        // New, never an existing file, never through a link.
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&tmp);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let written = file
            .write_all(&text)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        return written;
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary file could be created")))
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

    fn issuer_binding(&self, server_url: &str) -> Option<IssuerBinding> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let b = data.bindings.get(server_url)?;
        Some(IssuerBinding::new(b.client_id.clone(), b.issuer.clone()))
    }

    fn save_issuer_binding(&self, server_url: &str, binding: IssuerBinding) {
        let stored = StoredBinding {
            client_id: binding.client_id,
            issuer: binding.issuer,
        };
        self.change(|d| {
            d.bindings.insert(server_url.to_owned(), stored);
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

    /// Issue 22, defect 7: a directory others can read or write is refused, saying how to
    /// fix it, and not changed.
    #[test]
    fn a_directory_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("shared");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = FileTokenStore::open(open.join("tokens.json")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
        assert!(e.to_string().contains("mode 0755"), "{e}");
        assert!(e.to_string().contains("chmod 700"), "{e}");
        let mode = std::fs::metadata(&open).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "left as it was");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(FileTokenStore::open(open.join("tokens.json")).is_ok());
    }

    /// Issue 22, defect 7: the temporary copy is a new file of a name nobody can guess, so a
    /// link planted where the old name was (`tokens.tmp<pid>`) sends the tokens nowhere.
    #[test]
    fn a_planted_link_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("tokens.json");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        let planted = path.with_extension(format!("tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        let store = FileTokenStore::open(&path).unwrap();
        store.save_tokens("https://mcp/mcp", Tokens::new("https://as", "access-XYZ"));
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            meta.file_type().is_file(),
            "the token file is a file, not a link"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "no temporary file left behind: {names:?}");
    }

    #[test]
    fn the_file_store_keeps_what_a_store_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::open(dir.path().join("private/tokens.json")).unwrap();
        crate::auth::store::tests::suite(&store);
    }

    #[test]
    fn issuer_bindings_are_kept_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("tokens.json");
        let store = FileTokenStore::open(&path).unwrap();
        store.save_issuer_binding("https://mcp/mcp", IssuerBinding::new("svc", "https://as"));
        let again = FileTokenStore::open(&path).unwrap();
        assert_eq!(
            again.issuer_binding("https://mcp/mcp"),
            Some(IssuerBinding::new("svc", "https://as"))
        );
    }
}
