//! Marks the browser test (tests/browser.rs) ignored, rather than passed,
//! on a machine without chromedriver, so `cargo test` says it did not run;
//! with `YAMOR_REQUIRE_BROWSER` set it is never ignored and fails there.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_browser)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=YAMOR_REQUIRE_BROWSER");
    let paths = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<std::path::PathBuf> = std::env::split_paths(&paths)
        .filter(|d| d.is_absolute() && d.is_dir())
        .collect();
    // Installing chromium-driver changes its directory: look again then.
    for dir in &dirs {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    let found = dirs.iter().any(|d| d.join("chromedriver").is_file());
    if !found && std::env::var_os("YAMOR_REQUIRE_BROWSER").is_none() {
        println!("cargo::rustc-cfg=no_browser");
    }
}
