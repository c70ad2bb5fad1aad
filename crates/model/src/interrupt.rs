//! What an interrupted run leaves behind: nothing.
//!
//! Outputs are written into hidden temporaries beside them (`.cfghub-*.partial`) and renamed
//! into place when complete, so a failed run leaves the output as it was. A run stopped by a
//! signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP) would leave the temporary behind, since the
//! process ends without unwinding. So the command-line tool calls [`install`] first: the three
//! signals are blocked in every thread and one thread waits for them; when one comes it removes
//! every temporary [`register`]ed and not yet let go (and puts back an output folder moved
//! aside for its replacement), then ends the process by the same signal, as the shell expects.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What to undo for one registered temporary.
enum Undo {
    /// Remove a file or a folder.
    Remove(PathBuf),
    /// Move a folder back where it was if that place is empty, else remove it.
    MoveBack { from: PathBuf, to: PathBuf },
}

/// The temporaries of the running process, by registration number.
static PENDING: Mutex<Vec<(u64, Undo)>> = Mutex::new(Vec::new());
/// Set once a stopping signal was taken: the process ends by it, whatever the other threads do.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits for the end when a stopping signal was taken: the signal's thread removes the
/// temporaries (a writer then fails on a file gone) and ends the process by the signal, which
/// the main thread must not pre-empt by exiting with the writer's error or success. Returns at
/// once otherwise.
pub fn wait_if_stopping() {
    if STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A registered temporary: undone if a signal stops the process while this lives.
#[must_use = "the temporary is let go when this is dropped"]
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|(id, _)| *id != self.0);
    }
}

fn add(undo: Undo) -> Registered {
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).push((id, undo));
    Registered(id)
}

/// Registers a temporary file or folder, removed if a signal stops the process.
pub fn register(path: &Path) -> Registered {
    add(Undo::Remove(path.to_path_buf()))
}

/// Makes a temporary with `make` and registers the path `path_of` gives it as one step: a
/// signal that comes while it is being made waits for the registration, and so removes it too
/// (made first and registered after, a temporary could be left by a signal between the two).
pub fn create_registered<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl FnOnce(&T) -> PathBuf,
) -> std::io::Result<(T, Registered)> {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let made = make()?;
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    pending.push((id, Undo::Remove(path_of(&made))));
    Ok((made, Registered(id)))
}

/// Registers the place `make` makes for an output folder (`to`) to move aside to while its
/// replacement takes its place, as one step (see [`create_registered`]): moved back if a
/// signal stops the process while `to` is empty, else removed.
pub fn create_moved_aside<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl FnOnce(&T) -> PathBuf,
    to: &Path,
) -> std::io::Result<(T, Registered)> {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let made = make()?;
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    pending.push((id, Undo::MoveBack { from: path_of(&made), to: to.to_path_buf() }));
    Ok((made, Registered(id)))
}

/// Undoes every registered temporary (newest first).
fn undo_all() {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    undo(pending.drain(..).rev().map(|(_, undo)| undo));
}

fn undo(list: impl Iterator<Item = Undo>) {
    for undo in list {
        match undo {
            Undo::Remove(path) => {
                // A writer may still add a file to a folder while it goes: twice.
                for _ in 0..2 {
                    let _ = match std::fs::symlink_metadata(&path) {
                        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
                        Ok(_) => std::fs::remove_file(&path),
                        Err(_) => break,
                    };
                }
            }
            Undo::MoveBack { from, to } => {
                if std::fs::symlink_metadata(&to).is_err() {
                    let _ = std::fs::rename(&from, &to);
                } else {
                    // Not moved yet (`from` is the empty folder made for it), or its
                    // replacement has taken its place.
                    let _ = std::fs::remove_dir_all(&from);
                }
            }
        }
    }
}

/// The signals that stop a run from outside.
#[cfg(unix)]
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread it starts from now on, and
/// starts the thread that waits for them (see the module's documentation). Call it first in
/// `main`, before any other thread starts.
pub fn install() {
    #[cfg(unix)]
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; the calls only
    // change this thread's signal mask, which threads started later inherit.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiting = std::thread::Builder::new().name("signals".into()).spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` is the initialised set above; sigwait writes the signal taken.
            while libc::sigwait(&set, &mut signal) != 0 {}
            STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
            undo_all();
            // The process ends by the signal itself: default action, unblocked, raised.
            libc::signal(signal, libc::SIG_DFL);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(signal);
            libc::_exit(128 + signal);
        });
        if waiting.is_err() {
            // No waiting thread: the signals act as they did.
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undoing_removes_temporaries_and_moves_back_what_was_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let (file, folder) = (dir.path().join("f"), dir.path().join("d"));
        std::fs::write(&file, b"x").unwrap();
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("inner"), b"y").unwrap();
        let aside = dir.path().join("aside");
        std::fs::create_dir(&aside).unwrap();
        let target = dir.path().join("target");
        let list = [
            Undo::Remove(file.clone()),
            Undo::Remove(folder.clone()),
            Undo::MoveBack { from: aside.clone(), to: target.clone() },
        ];
        undo(list.into_iter());
        assert!(!file.exists() && !folder.exists());
        assert!(target.is_dir() && !aside.exists());
    }

    #[test]
    fn a_temporary_let_go_is_no_longer_registered() {
        let registered = register(Path::new("/nonexistent/a"));
        let id = registered.0;
        let listed = |id| PENDING.lock().unwrap().iter().any(|(i, _)| *i == id);
        assert!(listed(id));
        drop(registered);
        assert!(!listed(id));
    }
}
