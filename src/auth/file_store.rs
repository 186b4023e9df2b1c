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
//! changed behind the user's back. Read when opened, and again before every change and every
//! renewal: several processes may share the file (two `mcpctl` runs at once). A change reads
//! the file, applies itself and writes the file under an exclusive lock on `.<name>.lock`, so
//! that no process writes back another's change unseen; a renewal holds a lock of its server
//! URL's own (`.<name>.<digest of the URL>.lock`) for as long as it lasts, so that one process
//! refreshes a rotated refresh token and the others take its tokens. The locks are advisory
//! (`flock`), on files beside the token file in its private directory, and every wait for one
//! is bounded or ends with its waiter. A file that cannot be read, written or locked is
//! logged (never its contents) and the store goes on: in memory, where a change not yet
//! written stays over what the file says until it is written, so that a rotated refresh
//! token is never traded back for the one it replaced.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::store::{store_id, LocalRenewal};
use super::{
    IssuerBinding, Registration, RenewalFuture, RenewalGuard, Secret, TokenStore, TokenStoreError,
    Tokens,
};

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
    state: Mutex<State>,
}

/// What the store knows: the file's contents as last read, with the changes it could not
/// write yet laid over them (again after every read).
struct State {
    data: Data,
    unsaved: Vec<Change>,
}

/// A change of the store, kept to be laid again over what the file says until it is written.
type Change = Box<dyn Fn(&mut Data) + Send>;

/// Changes kept unwritten at most (the file cannot be written for a long time): the oldest
/// goes first; later changes of the same entry have superseded it.
const MAX_UNSAVED: usize = 256;

/// How long a change waits for another process's change of the file (milliseconds each: a
/// read and a write) before it goes on without the lock.
const CHANGE_LOCK_WAIT: Duration = Duration::from_secs(2);

/// How often a renewal looks whether another process's renewal has let go of its lock (a
/// wait that looks can end with its waiter).
const RENEWAL_LOCK_LOOK: Duration = Duration::from_millis(50);

impl State {
    /// What the file says now, with the unwritten changes laid over it.
    fn adopt(&mut self, stored: Data) {
        self.data = stored;
        for change in &self.unsaved {
            change(&mut self.data);
        }
    }
}

// The file's contents are never shown.
impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}, {} unsaved", self.data, self.unsaved.len())
    }
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
        let data = read(&path)?.unwrap_or_default();
        Ok(FileTokenStore {
            path,
            state: Mutex::new(State {
                data,
                unsaved: Vec::new(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again (another process may have changed it), applies `change` and
    /// writes the file, under the lock of changes (waited for [`CHANGE_LOCK_WAIT`] at most).
    /// What cannot be read, locked or written is logged; a change not written is kept, over
    /// what the file says, until a later write takes it. The error is the write's.
    fn change(&self, change: Change) -> std::io::Result<()> {
        let mut state = self.state();
        let _changing = self.lock_changes();
        match read(&self.path) {
            Ok(Some(stored)) => state.adopt(stored),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "the token file cannot be read: it is written again from memory");
            }
        }
        change(&mut state.data);
        let written = write(&self.path, &state.data);
        match &written {
            Ok(()) => state.unsaved.clear(),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "the token file could not be written: the change is kept in memory until it can be");
                if state.unsaved.len() == MAX_UNSAVED {
                    drop(state.unsaved.remove(0));
                }
                state.unsaved.push(change);
            }
        }
        written
    }

    /// The lock of changes, if it can be had within [`CHANGE_LOCK_WAIT`]: a change is short,
    /// and one that cannot have the lock (a file system without locks, a process stopped
    /// while it held it) goes on without it rather than hold up its caller.
    fn lock_changes(&self) -> Option<std::fs::File> {
        let path = lock_path(&self.path, None);
        let started = std::time::Instant::now();
        let waited = lock_until(&path, Duration::from_millis(5), || {
            started.elapsed() >= CHANGE_LOCK_WAIT
        })
        .and_then(|file| {
            file.ok_or_else(|| {
                std::io::Error::other(format!(
                    "another process held it for {} s",
                    CHANGE_LOCK_WAIT.as_secs()
                ))
            })
        });
        match waited {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "the token file's lock of changes cannot be had: changing it without");
                None
            }
        }
    }

    /// What the file holds now (with the changes not written yet over it), kept as this
    /// store's view too.
    fn reread(&self) -> std::io::Result<()> {
        let mut state = self.state();
        if let Some(stored) = read(&self.path)? {
            state.adopt(stored);
        }
        Ok(())
    }

    fn save(&self, server_url: &str, tokens: Tokens) -> std::io::Result<()> {
        let stored = StoredTokens {
            issuer: tokens.issuer,
            access_token: tokens.access_token.expose().to_owned(),
            refresh_token: tokens.refresh_token.map(|s| s.expose().to_owned()),
            expires_at: tokens.expires_at.map(secs),
            scope: tokens.scope,
            dpop: tokens.dpop,
        };
        let url = server_url.to_owned();
        self.change(Box::new(move |d| {
            d.tokens.insert(url.clone(), stored.clone());
        }))
    }

    fn failed(&self, e: &std::io::Error) -> TokenStoreError {
        TokenStoreError::Database {
            database: self.path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// The file's contents; `None` if there is no file (yet). Never blocks on what is not a
/// file (a fifo put there).
fn read(path: &Path) -> std::io::Result<Option<Data>> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(file) => {
            use std::io::Read as _;
            if !file.metadata()?.is_file() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the token file is not a regular file",
                ));
            }
            let mut text = Vec::new();
            file.take(MAX_FILE).read_to_end(&mut text)?;
            serde_json::from_slice(&text).map(Some).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the token file is not valid",
                )
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The lock file beside the token file: of changes (`None`), or of one server URL's renewals.
fn lock_path(path: &Path, server_url: Option<&str>) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "tokens".into(), |n| n.to_string_lossy().into_owned());
    match server_url {
        None => path.with_file_name(format!(".{name}.lock")),
        Some(url) => {
            use sha2::Digest as _;
            let digest = sha2::Sha256::digest(url.as_bytes());
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            path.with_file_name(format!(".{name}.{hex}.lock"))
        }
    }
}

/// Locks the lock file at `path` exclusively, looking every `look` whether another process
/// has let go of it (`flock` cannot wait with a deadline), until `give_up` says to (`None`).
/// The lock lasts as long as the file returned stays open.
fn lock_until(
    path: &Path,
    look: Duration,
    give_up: impl Fn() -> bool,
) -> std::io::Result<Option<std::fs::File>> {
    let file = open_lock(path)?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) if give_up() => return Ok(None),
            Err(std::fs::TryLockError::WouldBlock) => std::thread::sleep(look),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Opens the lock file at `path`, creating it `0600`, never through a link (read-only if it
/// exists where we may not write: `flock` needs no more). Only a regular file of the token
/// directory's owner that nobody else may open is a lock: another user able to open it could
/// hold it forever.
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt as _;
    let mut options = std::fs::OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = match options
        .clone()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
    {
        Ok(file) => file,
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.raw_os_error() == Some(libc::EROFS) =>
        {
            options.read(true).open(path)?
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    // The owner of the token directory (which `open` checked is closed to others).
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let owner = std::fs::metadata(dir.unwrap_or(Path::new(".")))?.uid();
    if !meta.is_file() || meta.uid() != owner || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the lock file is not a private regular file of this user's",
        ));
    }
    Ok(file)
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
        let state = self.state();
        let data = &state.data;
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
        let _ = self.save(server_url, tokens);
    }

    fn lock_renewal(&self, server_url: &str) -> RenewalFuture {
        let local = LocalRenewal::lock(store_id(self), server_url.to_owned());
        let path = lock_path(&self.path, Some(server_url));
        let shown = self.path.display().to_string();
        Box::pin(async move {
            let local = local.await;
            // Another process renews: on a thread, as long as that lasts or until this renewal
            // gives up (the future dropped: the thread sees nobody waits, and ends).
            let (granted, grant) = tokio::sync::oneshot::channel();
            let waiting = std::thread::Builder::new()
                .name("mcp-token-file-lock".into())
                .spawn(move || {
                    match lock_until(&path, RENEWAL_LOCK_LOOK, || granted.is_closed()) {
                        Ok(Some(file)) => {
                            let _ = granted.send(Ok(file));
                        }
                        // Nobody waits any more.
                        Ok(None) => {}
                        Err(e) => {
                            let _ = granted.send(Err(e));
                        }
                    }
                });
            let locked = match waiting {
                Ok(_) => grant
                    .await
                    .unwrap_or_else(|_| Err(std::io::Error::other("the lock's thread ended"))),
                Err(e) => Err(e),
            };
            match locked {
                Ok(file) => Ok(RenewalGuard::holding((local, file))),
                Err(e) => {
                    tracing::warn!(path = %shown, error = %e, "the token file's renewal lock cannot be had: renewing with this process's lock only");
                    Ok(RenewalGuard::holding(local))
                }
            }
        })
    }

    fn tokens_for_renewal(&self, server_url: &str) -> Result<Option<Tokens>, TokenStoreError> {
        self.reread().map_err(|e| self.failed(&e))?;
        Ok(self.tokens(server_url))
    }

    fn save_renewed_tokens(&self, server_url: &str, tokens: Tokens) -> Result<(), TokenStoreError> {
        self.save(server_url, tokens).map_err(|e| self.failed(&e))
    }

    fn clear_tokens(&self, server_url: &str) {
        let url = server_url.to_owned();
        let _ = self.change(Box::new(move |d| {
            d.tokens.remove(&url);
        }));
    }

    fn registration(&self, issuer: &str) -> Option<Registration> {
        let state = self.state();
        let data = &state.data;
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
        let issuer = issuer.to_owned();
        let _ = self.change(Box::new(move |d| {
            d.registrations.insert(issuer.clone(), stored.clone());
        }));
    }

    fn issuer_binding(&self, server_url: &str) -> Option<IssuerBinding> {
        let state = self.state();
        let data = &state.data;
        let b = data.bindings.get(server_url)?;
        Some(IssuerBinding::new(b.client_id.clone(), b.issuer.clone()))
    }

    fn save_issuer_binding(&self, server_url: &str, binding: IssuerBinding) {
        let stored = StoredBinding {
            client_id: binding.client_id,
            issuer: binding.issuer,
        };
        let url = server_url.to_owned();
        let _ = self.change(Box::new(move |d| {
            d.bindings.insert(url.clone(), stored.clone());
        }));
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
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let planted = planted.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            names,
            [
                ".tokens.json.lock",
                "elsewhere",
                "tokens.json",
                planted.as_str()
            ],
            "no temporary file left behind (the lock of changes stays)"
        );
    }

    #[test]
    fn stores_of_one_file_keep_each_others_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private/tokens.json");
        // Two processes, say: each opened the file before the other wrote to it.
        let first = FileTokenStore::open(&path).unwrap();
        let second = FileTokenStore::open(&path).unwrap();
        first.save_tokens("https://mcp/one", Tokens::new("https://as", "first-access"));
        second.save_registration(
            "https://as",
            Registration {
                issuer: "https://as".into(),
                client_id: "client-2".into(),
                client_secret: None,
                auth_method: None,
            },
        );
        let both = FileTokenStore::open(&path).unwrap();
        assert_eq!(
            both.tokens("https://mcp/one")
                .unwrap()
                .access_token
                .expose(),
            "first-access",
            "the second store's change did not write the first's away"
        );
        assert!(both.registration("https://as").is_some());
        // A renewal reads what another process saved since.
        second.save_tokens("https://mcp/one", Tokens::new("https://as", "renewed"));
        let seen = first
            .tokens_for_renewal("https://mcp/one")
            .unwrap()
            .unwrap();
        assert_eq!(seen.access_token.expose(), "renewed");
    }

    #[actix::test]
    async fn a_renewal_lock_is_one_for_every_store_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private/tokens.json");
        let first = FileTokenStore::open(&path).unwrap();
        let second = std::sync::Arc::new(FileTokenStore::open(&path).unwrap());
        let held = first.lock_renewal("https://mcp/one").await.expect("a lock");
        // Another server's renewals are not held up.
        let elsewhere = tokio::time::timeout(
            Duration::from_secs(20),
            second.lock_renewal("https://mcp/two"),
        )
        .await
        .expect("another server's lock at once");
        assert!(elsewhere.is_ok(), "{elsewhere:?}");
        // Not granted while held: looked at for a while (its thread looks every 50 ms).
        let mut waiting = second.lock_renewal("https://mcp/one");
        for _ in 0..10 {
            assert!(
                futures_util::FutureExt::now_or_never(&mut waiting).is_none(),
                "granted while held"
            );
            tokio::time::sleep(RENEWAL_LOCK_LOOK).await;
        }
        // A waiter (of a third store) that gives up leaves the lock to the next.
        let third = FileTokenStore::open(&path).unwrap();
        let mut abandoned = third.lock_renewal("https://mcp/one");
        assert!(
            futures_util::FutureExt::now_or_never(&mut abandoned).is_none(),
            "granted while held"
        );
        drop(abandoned);
        drop(held);
        let granted = tokio::time::timeout(Duration::from_secs(20), waiting)
            .await
            .expect("granted once the holder lets go");
        assert!(granted.is_ok(), "{granted:?}");
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

    #[test]
    fn stores_changing_one_file_at_once_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private/tokens.json");
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let store = FileTokenStore::open(&path).unwrap();
                std::thread::spawn(move || {
                    for n in 0..40 {
                        store.save_tokens(
                            &format!("https://mcp/{writer}/{n}"),
                            Tokens::new("https://as", "access"),
                        );
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let all = FileTokenStore::open(&path).unwrap();
        for writer in 0..2 {
            for n in 0..40 {
                assert!(
                    all.tokens(&format!("https://mcp/{writer}/{n}")).is_some(),
                    "writer {writer}'s token {n} kept"
                );
            }
        }
    }

    #[actix::test]
    async fn a_lock_that_cannot_be_had_leaves_the_store_working() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private/tokens.json");
        let store = FileTokenStore::open(&path).unwrap();
        // Directories where the locks would be: neither can be opened as a lock.
        std::fs::create_dir(lock_path(&path, None)).unwrap();
        std::fs::create_dir(lock_path(&path, Some("https://mcp/one"))).unwrap();
        let guard = tokio::time::timeout(
            Duration::from_secs(20),
            store.lock_renewal("https://mcp/one"),
        )
        .await
        .expect("at once");
        assert!(guard.is_ok(), "this process's lock only: {guard:?}");
        store
            .save_renewed_tokens("https://mcp/one", Tokens::new("https://as", "renewed"))
            .expect("written without the lock of changes");
        let again = FileTokenStore::open(&path).unwrap();
        assert_eq!(
            again
                .tokens("https://mcp/one")
                .unwrap()
                .access_token
                .expose(),
            "renewed"
        );
    }
}
