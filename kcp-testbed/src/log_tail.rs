//! The last lines of a log file, for errors that show what a peer or a build said last.

use std::path::Path;

/// The last `lines` lines of the file at `path` (or why it could not be read).
pub fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(log {} unreadable: {e})", path.display()),
    }
}
