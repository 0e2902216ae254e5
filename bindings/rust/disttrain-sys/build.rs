// SPDX-License-Identifier: Apache-2.0
//! Finds libdisttrain.so and tells rustc to link it. In order:
//! 1. DISTTRAIN_LIB_DIR, a folder holding libdisttrain.so;
//! 2. `pkg-config --libs disttrain` (PKG_CONFIG_PATH may point at
//!    <build>/meson-uninstalled to use a build tree);
//! 3. a build tree: DISTTRAIN_BUILD_DIR/core, then <repo>/build/core.
//! The folder found is passed to dependents as DEP_DISTTRAIN_LIB_DIR (so the `disttrain`
//! crate can add an rpath), and gets an rpath here, so tests run without LD_LIBRARY_PATH.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIB_FILE: &str = "libdisttrain.so";

fn from_env_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("DISTTRAIN_LIB_DIR")?);
    if !dir.join(LIB_FILE).exists() {
        panic!(
            "DISTTRAIN_LIB_DIR={} holds no {}: point it at the folder of the library \
             (e.g. <build>/core) or unset it",
            dir.display(),
            LIB_FILE
        );
    }
    Some(dir)
}

/// The -L folder of `pkg-config --libs disttrain` that holds the library, if any. A
/// pkg-config hit with no -L (installed in a default folder) gives Some(None).
fn from_pkg_config() -> Option<Option<PathBuf>> {
    let out = Command::new("pkg-config").args(["--libs", "disttrain"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dirs: Vec<PathBuf> = text
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(PathBuf::from)
        .collect();
    Some(dirs.into_iter().find(|d| d.join(LIB_FILE).exists()))
}

fn from_build_tree(manifest: &Path) -> Option<PathBuf> {
    let mut trees = Vec::new();
    if let Some(b) = env::var_os("DISTTRAIN_BUILD_DIR") {
        trees.push(PathBuf::from(b));
    }
    // bindings/rust/disttrain-sys -> <repo>
    if let Some(repo) = manifest.ancestors().nth(3) {
        trees.push(repo.join("build"));
    }
    trees.into_iter().map(|t| t.join("core")).find(|d| d.join(LIB_FILE).exists())
}

fn main() {
    for var in ["DISTTRAIN_LIB_DIR", "DISTTRAIN_BUILD_DIR", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());

    let dir = match from_env_dir() {
        Some(d) => Some(d),
        None => match from_pkg_config() {
            Some(found) => found,
            None => {
                let tree = from_build_tree(&manifest);
                if tree.is_none() {
                    println!(
                        "cargo:warning=libdisttrain.so not found through DISTTRAIN_LIB_DIR, \
                         `pkg-config --libs disttrain` or a build tree (DISTTRAIN_BUILD_DIR/core, \
                         <repo>/build/core); linking -ldisttrain from the default folders"
                    );
                }
                tree
            }
        },
    };
    if let Some(dir) = dir {
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        println!("cargo:lib_dir={}", dir.display()); // DEP_DISTTRAIN_LIB_DIR
        println!("cargo:rerun-if-changed={}", dir.join(LIB_FILE).display());
        // <build>/core -> <build>/plugins/transport/tcp, for tests of a build tree.
        if let Some(build) = dir.parent() {
            let plugins = build.join("plugins").join("transport").join("tcp");
            if plugins.exists() {
                println!("cargo:plugin_dir={}", plugins.display());
            }
        }
    }
    println!("cargo:rustc-link-lib=dylib=disttrain");
}
