//! The token file: every server's OAuth credentials in one private JSON file, keyed by the
//! server's URL, and the lock that makes a refresh one read-refresh-write.

use std::collections::BTreeMap;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The file name under the per-user configuration directory.
const DEFAULT_RELATIVE: &str = "tools/mcp-oauth/credentials.json";

/// The file that keeps the OAuth tokens of the servers a person logged in to: one JSON object
/// keyed by each server's URL, readable and writable by its owner only (mode `0600`, in a
/// directory of mode `0700`), replaced whole on each write (never half-written), and guarded by
/// a lock file beside it while a token is refreshed, so that two processes never refresh the same
/// token at once.
///
/// A file that others may read (group or world permission bits set) is refused: its tokens may
/// have been read, and the error says how to fix the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFile {
    path: PathBuf,
}

/// A token file that cannot be found, read or written (from [`TokenFile::default_location`] and
/// [`TokenFile::remove`]): its text says what went wrong and, where it can, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFileError(String);

impl std::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokenFileError {}

/// One server's entry.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The server's name when it was logged in to (for the person reading the file).
    pub server: String,
    /// The client id, the token response, the granted scopes, when it was received and the
    /// authorization server that issued it.
    pub credentials: StoredCredentials,
    /// The client's secret, when the authorization server gave it one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered with.
    pub redirect_uri: String,
    /// Scopes the server asked for in a 403 `insufficient_scope` challenge beyond those granted:
    /// the next login asks for them too (a refresh may not widen a grant).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct Contents {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// Held while a token is read, refreshed and written back; dropping it unlocks.
pub(crate) struct FileLock {
    _file: File,
}

impl TokenFile {
    /// The token file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> TokenFile {
        TokenFile { path: path.into() }
    }

    /// The per-user token file: `$XDG_CONFIG_HOME/tools/mcp-oauth/credentials.json`, or
    /// `~/.config/tools/mcp-oauth/credentials.json` when `XDG_CONFIG_HOME` is not set. The
    /// error says which variable to set when neither is.
    pub fn default_location() -> Result<TokenFile, TokenFileError> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|dir| Path::new(dir).is_absolute())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").filter(|home| Path::new(home).is_absolute()).map(|home| {
                    Path::new(&home).join(".config")
                })
            })
            .ok_or_else(|| {
                TokenFileError(
                    "neither XDG_CONFIG_HOME nor HOME names a directory, so there is no place for OAuth tokens; set one of them"
                        .to_owned(),
                )
            })?;
        Ok(TokenFile { path: base.join(DEFAULT_RELATIVE) })
    }

    /// The token file of `config`: its `token_file`, or the per-user one.
    pub(crate) fn for_config(config: &crate::client::OAuthConfig) -> Result<TokenFile, String> {
        match &config.token_file {
            Some(path) => Ok(TokenFile::at(path)),
            None => TokenFile::default_location().map_err(|e| e.0),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// Removes the tokens of the server at `url`, under the lock; whether there were any.
    pub fn remove(&self, url: &str) -> Result<bool, TokenFileError> {
        self.remove_entry(url).map_err(TokenFileError)
    }

    fn remove_entry(&self, url: &str) -> Result<bool, String> {
        let key = key(url)?;
        let _lock = self.lock_blocking()?;
        let mut contents = self.read()?;
        let removed = contents.servers.remove(&key).is_some();
        if removed {
            self.write(&contents)?;
        }
        Ok(removed)
    }

    /// The entry of the server at `url`, if there is one.
    pub(crate) fn entry(&self, url: &str) -> Result<Option<Entry>, String> {
        let key = key(url)?;
        Ok(self.read()?.servers.remove(&key))
    }

    /// Sets the entry of the server at `url`. The caller holds the lock.
    pub(crate) fn set_entry(&self, url: &str, entry: Entry) -> Result<(), String> {
        let key = key(url)?;
        let mut contents = self.read()?;
        contents.servers.insert(key, entry);
        self.write(&contents)
    }

    fn read(&self) -> Result<Contents, String> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::default()),
            Err(e) => return Err(format!("cannot read the OAuth token file {} ({e})", self.path.display())),
        };
        check_private(&self.path, &file)?;
        let contents: Contents = serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| {
            format!(
                "the OAuth token file {} is not what this program writes ({e}); remove it and log in again",
                self.path.display()
            )
        })?;
        Ok(contents)
    }

    /// Writes the whole file anew: a private temporary file beside it, renamed over it.
    fn write(&self, contents: &Contents) -> Result<(), String> {
        let cannot =
            |e: std::io::Error| format!("cannot write the OAuth token file {} ({e})", self.path.display());
        self.private_directory()?;
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let temporary = PathBuf::from(temporary);
        let _ = std::fs::remove_file(&temporary);
        let mut file =
            OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary).map_err(cannot)?;
        let contents = Contents { version: 1, servers: contents.servers.clone() };
        let text = serde_json::to_vec_pretty(&contents).map_err(|e| cannot(std::io::Error::other(e)))?;
        let written = file.write_all(&text).and_then(|()| file.sync_all());
        if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, &self.path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(cannot(e));
        }
        Ok(())
    }

    /// Creates the file's directory with mode `0700`; one that exists is made `0700` when it is
    /// ours and others could enter it.
    fn private_directory(&self) -> Result<(), String> {
        let Some(dir) = self.path.parent().filter(|dir| !dir.as_os_str().is_empty()) else { return Ok(()) };
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create the directory {} ({e})", parent.display()))?;
        }
        match DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let metadata = std::fs::symlink_metadata(dir)
                    .map_err(|e| format!("cannot read the directory {} ({e})", dir.display()))?;
                if !metadata.is_dir() {
                    return Err(format!(
                        "{} is not a directory (a link, say); the OAuth tokens are kept only in a real private directory",
                        dir.display()
                    ));
                }
                if metadata.mode() & 0o077 != 0 && metadata.uid() == current_uid() {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                        .map_err(|e| format!("cannot make {} private ({e})", dir.display()))?;
                }
                Ok(())
            }
            Err(e) => Err(format!("cannot create the directory {} ({e})", dir.display())),
        }
    }

    /// Takes the file's lock, waiting for another process that holds it.
    pub(crate) fn lock_blocking(&self) -> Result<FileLock, String> {
        self.private_directory()?;
        let path = self.lock_path();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot open the OAuth lock file {} ({e})", path.display()))?;
        file.lock().map_err(|e| format!("cannot lock the OAuth lock file {} ({e})", path.display()))?;
        Ok(FileLock { _file: file })
    }

    /// [`lock_blocking`](Self::lock_blocking) on a thread that may block.
    pub(crate) async fn lock(&self) -> Result<FileLock, String> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || file.lock_blocking())
            .await
            .map_err(|e| format!("the OAuth lock was not taken ({e})"))?
    }
}

/// The key of a server: its URL as parsed (host in lower case, default port left out).
pub(crate) fn key(url: &str) -> Result<String, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL ({e}); correct `url`"))?;
    Ok(parsed.to_string())
}

/// Refuses a token file that is not a plain file of ours, private to us.
fn check_private(path: &Path, file: &File) -> Result<(), String> {
    let metadata =
        file.metadata().map_err(|e| format!("cannot read the OAuth token file {} ({e})", path.display()))?;
    let link = std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false);
    if link || !metadata.is_file() {
        return Err(format!(
            "the OAuth token file {} is not a plain file (a link, say); remove it and log in again",
            path.display()
        ));
    }
    if metadata.uid() != current_uid() {
        return Err(format!(
            "the OAuth token file {} belongs to another user; remove it and log in again",
            path.display()
        ));
    }
    let mode = metadata.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the OAuth token file {} may be read by other users (mode {mode:04o}), so its tokens may have leaked; make it private with `chmod 600 {}` (and log in again to be safe)",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// Our user id, as the kernel shows it on our own process directory.
fn current_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or_else(|_| {
        // Without /proc: the owner of a file we create now.
        let probe = std::env::temp_dir().join(format!(".tools-uid-{}", std::process::id()));
        let uid = File::create(&probe).and_then(|f| f.metadata()).map(|m| m.uid()).unwrap_or(u32::MAX);
        let _ = std::fs::remove_file(&probe);
        uid
    })
}

/// rmcp's view of one server's entry. Loads and saves go straight to the file: the callers (a
/// login's code exchange, a refresh) hold the file's lock around them, so this store takes no
/// lock of its own.
#[derive(Clone)]
pub(crate) struct EntryStore {
    pub file: TokenFile,
    pub url: String,
    pub server: String,
    pub client_secret: Option<String>,
    pub redirect_uri: String,
}

fn store_error(message: String) -> AuthError {
    AuthError::CredentialStoreError(message)
}

#[async_trait::async_trait]
impl CredentialStore for EntryStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.file.entry(&self.url).map_err(store_error)?.map(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        // Scopes still wanted are kept until a grant includes them.
        let wanted_scopes = match self.file.entry(&self.url) {
            Ok(Some(old)) => old
                .wanted_scopes
                .into_iter()
                .filter(|scope| !credentials.granted_scopes.contains(scope))
                .collect(),
            _ => Vec::new(),
        };
        let entry = Entry {
            server: self.server.clone(),
            credentials,
            client_secret: self.client_secret.clone(),
            redirect_uri: self.redirect_uri.clone(),
            wanted_scopes,
        };
        self.file.set_entry(&self.url, entry).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let key = key(&self.url).map_err(store_error)?;
        let mut contents = self.file.read().map_err(store_error)?;
        if contents.servers.remove(&key).is_some() {
            self.file.write(&contents).map_err(store_error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tools-oauth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entry(access: &str) -> Entry {
        let credentials: StoredCredentials = serde_json::from_value(serde_json::json!({
            "client_id": "c1",
            "token_response": {"access_token": access, "token_type": "bearer", "expires_in": 60, "refresh_token": "r1"},
            "granted_scopes": [],
            "token_received_at": 1,
        }))
        .unwrap();
        Entry {
            server: "s".into(),
            credentials,
            client_secret: None,
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            wanted_scopes: Vec::new(),
        }
    }

    #[test]
    fn the_file_is_private_in_a_private_directory_and_keyed_by_url() {
        let dir = temp_dir("private");
        let file = TokenFile::at(dir.join("nested/credentials.json"));
        file.set_entry("http://LOCALHOST:80/mcp", entry("a1")).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o777;
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(mode(&dir.join("nested")), 0o700);
        // The same server however its URL is written.
        let stored = file.entry("http://localhost/mcp").unwrap().expect("the entry");
        assert_eq!(stored.credentials.client_id, "c1");
        assert!(file.entry("http://localhost/other").unwrap().is_none());
        assert!(file.remove("http://localhost/mcp").unwrap());
        assert!(!file.remove("http://localhost/mcp").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_others_may_read_is_refused_with_the_fix() {
        let dir = temp_dir("readable");
        let file = TokenFile::at(dir.join("credentials.json"));
        file.set_entry("http://127.0.0.1:9/mcp", entry("a1")).unwrap();
        for mode in [0o640, 0o604, 0o660] {
            std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            let error = file.entry("http://127.0.0.1:9/mcp").err().expect("refused");
            assert!(error.contains(&format!("(mode {mode:04o})")), "{error}");
            assert!(error.contains("chmod 600"), "{error}");
        }
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(file.entry("http://127.0.0.1:9/mcp").unwrap().is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_in_place_of_the_file_or_directory_is_refused() {
        let dir = temp_dir("link");
        let elsewhere = dir.join("elsewhere.json");
        std::fs::write(&elsewhere, r#"{"version":1,"servers":{}}"#).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("credentials.json")).unwrap();
        let file = TokenFile::at(dir.join("credentials.json"));
        let error = file.entry("http://127.0.0.1:9/mcp").err().expect("refused");
        assert!(error.contains("not a plain file"), "{error}");

        std::fs::create_dir(dir.join("real")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("linked")).unwrap();
        let file = TokenFile::at(dir.join("linked/credentials.json"));
        let error = file.set_entry("http://127.0.0.1:9/mcp", entry("a1")).expect_err("refused");
        assert!(error.contains("not a directory"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_loose_directory_of_ours_is_made_private() {
        let dir = temp_dir("loose");
        let tokens = dir.join("tokens");
        std::fs::create_dir(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o755)).unwrap();
        TokenFile::at(tokens.join("credentials.json"))
            .set_entry("http://127.0.0.1:9/mcp", entry("a1"))
            .unwrap();
        assert_eq!(std::fs::metadata(&tokens).unwrap().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_lock_excludes_a_second_holder_until_dropped() {
        let dir = temp_dir("lock");
        let file = TokenFile::at(dir.join("credentials.json"));
        let held = file.lock_blocking().unwrap();
        let (taken, was_taken) = std::sync::mpsc::channel();
        let second = file.clone();
        let waiter = std::thread::spawn(move || {
            let _lock = second.lock_blocking().unwrap();
            taken.send(()).unwrap();
        });
        assert!(was_taken.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "taken twice");
        drop(held);
        was_taken.recv_timeout(std::time::Duration::from_secs(5)).expect("taken after the first let go");
        waiter.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
