// SPDX-License-Identifier: Apache-2.0
//! Adds an rpath to the folder where disttrain-sys found libdisttrain.so, so this crate's
//! tests and examples run from a build tree without LD_LIBRARY_PATH (a build script's
//! link arguments only reach its own package's binaries), and tells the tests where the
//! build tree's transport plugin, launcher and test plugins are.
fn main() {
    if let Ok(dir) = std::env::var("DEP_DISTTRAIN_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    let plugins = std::env::var("DEP_DISTTRAIN_PLUGIN_DIR").unwrap_or_default();
    println!("cargo:rustc-env=DISTTRAIN_BUILD_PLUGIN_DIR={plugins}");
    // <build>/core -> <build>/core/launch/disttrainrun, for the 2-rank test.
    let launcher = std::env::var("DEP_DISTTRAIN_LIB_DIR")
        .map(|d| std::path::Path::new(&d).join("launch").join("disttrainrun"))
        .ok()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=DISTTRAIN_BUILD_LAUNCHER={launcher}");
    // <build>/core -> <build>, for the tests that need the build tree's test plugins.
    let tree = std::env::var("DEP_DISTTRAIN_LIB_DIR")
        .ok()
        .and_then(|d| std::path::Path::new(&d).parent().map(|p| p.display().to_string()))
        .unwrap_or_default();
    println!("cargo:rustc-env=DISTTRAIN_BUILD_TREE={tree}");
}
