//! `envFile` (VS Code, Cursor): a dotenv file whose variables are set for a stdio server, read
//! with `dotenvy`.
//!
//! Its own room because the file holds secrets by design: it is read with a size bound, and
//! its errors name the file, the line and the variable, never a line's content (dotenvy's own
//! parse error quotes the line, which is why it is not passed on).
//!
//! dotenvy's rules apply: `KEY=value`, `export KEY=value`, quotes, escapes, `#` comments, and
//! `$VAR`/`${VAR}` substitution from earlier lines of the file and the process's environment.
//! When a key is repeated, the last line wins, as when a shell sources the file.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The largest envFile read: a dotenv file is a handful of lines, and this bounds what a
/// misnamed path (a log, a disk image) can make us read into memory.
const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// The variables of the dotenv file at `path`.
pub(super) fn read(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_ENV_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_ENV_FILE_BYTES {
        return Err(format!(
            "{shown} is larger than {MAX_ENV_FILE_BYTES} bytes: not a dotenv file"
        ));
    }
    let mut vars = BTreeMap::new();
    for item in dotenvy::from_read_iter(bytes.as_slice()) {
        match item {
            Ok((key, value)) => {
                vars.insert(key, value);
            }
            Err(dotenvy::Error::LineParse(line, _)) => {
                return Err(format!("{shown}: {}", describe_bad_line(&bytes, &line)))
            }
            Err(e) => return Err(format!("cannot read {shown}: {e}")),
        }
    }
    Ok(vars)
}

/// Where the line dotenvy could not parse is, and the variable it sets if that much is
/// readable: never its content, which may be a secret.
fn describe_bad_line(file: &[u8], line: &str) -> String {
    let text = String::from_utf8_lossy(file);
    let number = text
        .find(line.trim_end())
        .filter(|_| !line.trim().is_empty())
        .map(|at| text[..at].matches('\n').count() + 1);
    let key = line
        .trim_start()
        .trim_start_matches("export ")
        .split('=')
        .next()
        .map(str::trim)
        .filter(|key| {
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    let at = match number {
        Some(n) => format!("line {n}"),
        None => "a line".to_owned(),
    };
    match key {
        Some(key) => format!("{at} (setting {key}) cannot be parsed; its content is not shown"),
        None => format!("{at} cannot be parsed; its content is not shown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn reads_dotenv_syntax() {
        let f = file(
            "# comment\nA=1\nexport B=\"two words\"\nC=\"quoted # not a comment\"\nD='single'\n\
             E=first\nE=last\nF=${A}-sub\n\n",
        );
        let vars = read(f.path()).unwrap();
        let get = |k: &str| vars.get(k).map(String::as_str);
        assert_eq!(get("A"), Some("1"));
        assert_eq!(get("B"), Some("two words"));
        assert_eq!(get("C"), Some("quoted # not a comment"));
        assert_eq!(get("D"), Some("single"));
        assert_eq!(get("E"), Some("last"));
        assert_eq!(get("F"), Some("1-sub"));
        assert_eq!(vars.len(), 6);
    }

    #[test]
    fn a_bad_line_is_located_without_showing_it() {
        let f = file("OK=1\nAPI_KEY=\"hunter2\n");
        let e = read(f.path()).unwrap_err();
        assert!(e.contains("API_KEY"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let f = file("OK=1\nnot a line hunter2\n");
        let e = read(f.path()).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn missing_and_oversized_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(&dir.path().join("nope.env")).unwrap_err();
        assert!(e.contains("nope.env"), "{e}");
        let big = file(&"A=1\n".repeat(300_000));
        assert!(read(big.path()).unwrap_err().contains("larger than"));
    }
}
