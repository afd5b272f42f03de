//! Records the git commit the binary is built from (`PARTMAP_COMMIT`), for the build identity
//! a sweep summary carries (`partmap_sim::sweep::summary::Build`). `-dirty` is appended when tracked
//! files that go into the build differ from the commit. Outside a git checkout (a source
//! tarball) the commit is unknown unless `PARTMAP_COMMIT` is set in the environment.

use std::path::Path;
use std::process::Command;

/// What goes into the build, relative to this package (`sim/`).
const INPUTS: [&str; 7] = ["src", "build.rs", "Cargo.toml", "../src", "../scenarios", "../Cargo.toml", "../Cargo.lock"];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PARTMAP_COMMIT");
    for input in INPUTS {
        println!("cargo:rerun-if-changed={input}");
    }
    if let Ok(commit) = std::env::var("PARTMAP_COMMIT") {
        println!("cargo:rustc-env=PARTMAP_COMMIT={commit}");
        return;
    }
    let Some(head) = git(&["rev-parse", "HEAD"]) else { return };
    // Build again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
    // packed refs. `--git-path` resolves them in a worktree too.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        let Some(path) = git(&["rev-parse", "--git-path", &name]) else { continue };
        // A branch kept only in packed-refs gets its own file at the next commit: watch the
        // folder it will appear in (a path that does not exist would rebuild every time).
        let path = Path::new(&path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        } else if let Some(parent) = path.parent().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", parent.display());
        }
    }
    let mut diff = vec!["diff", "--quiet", "HEAD", "--"];
    diff.extend(INPUTS);
    let clean = Command::new("git").args(&diff).status().map(|s| s.success()).unwrap_or(false);
    println!("cargo:rustc-env=PARTMAP_COMMIT={head}{}", if clean { "" } else { "-dirty" });
}
