// SPDX-License-Identifier: Apache-2.0
//! Shared by the integration tests: a single-process context that finds the build
//! tree's transport plugin.
use std::sync::Once;

static ENV: Once = Once::new();

/// Points DISTTRAIN_PLUGIN_PATH at the build tree's plugins unless the caller set it.
pub fn setup_env() {
    ENV.call_once(|| {
        let plugins = env!("DISTTRAIN_BUILD_PLUGIN_DIR");
        if std::env::var_os("DISTTRAIN_PLUGIN_PATH").is_none() && !plugins.is_empty() {
            std::env::set_var("DISTTRAIN_PLUGIN_PATH", plugins);
        }
    });
}

#[allow(dead_code)]
pub fn single() -> disttrain::Context {
    setup_env();
    // The single-process tests must not join a job the caller may be part of.
    for var in ["DISTTRAIN_RANK", "DISTTRAIN_SIZE", "DISTTRAIN_STORE_ADDR"] {
        assert!(std::env::var_os(var).is_none(), "{var} is set: run the tests outside a job");
    }
    let ctx = disttrain::Context::new().expect("single-process context");
    assert_eq!((ctx.rank(), ctx.size()), (0, 1));
    ctx
}
