//! Finds libpot with pkg-config and generates the FFI from its `pot.h`.
//!
//! The header is the one of the library that is linked, so the constants
//! (`POT_ABI_VERSION` above all) describe that library's ABI. bindgen's layout
//! tests (compile-time size, alignment and offset assertions for every struct)
//! are kept: they are this crate's layout test.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    let lib = match pkg_config::Config::new().atleast_version("0.3.0").probe("pot") {
        Ok(lib) => lib,
        Err(e) => {
            let path = env::var("PKG_CONFIG_PATH").unwrap_or_default();
            panic!(
                "\n\npot-sys: libpot was not found by pkg-config (package `pot`).\n\
                 Build and install libpot first, then point pkg-config at it:\n\
                 \n    cmake --preset release && cmake --build build-release\
                 \n    cmake --install build-release --prefix PREFIX\
                 \n    export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig\
                 \n    export LD_LIBRARY_PATH=PREFIX/lib   # to run the tests and programs\n\
                 \nPKG_CONFIG_PATH is currently {path:?}.\n\
                 pkg-config said: {e}\n"
            );
        }
    };

    let header = lib.include_paths.iter().map(|dir| dir.join("pot.h")).find(|h| h.is_file()).unwrap_or_else(|| {
        panic!("pot-sys: pkg-config found libpot but no pot.h in its include paths {:?}", lib.include_paths)
    });
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:include={}", header.parent().unwrap_or(Path::new(".")).display());

    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(lib.include_paths.iter().map(|p| format!("-I{}", p.display())))
        .allowlist_function("pot_.*")
        .allowlist_type("pot_.*")
        .allowlist_var("POT_.*")
        // C enums become newtypes over their integer type (`pot_status(u32)`
        // with `pot_status::POT_OK`...): any value the library returns is
        // valid, unlike a Rust enum, and the names stay those of pot.h.
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: false, is_global: false })
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_eq(true)
        .derive_hash(true)
        .layout_tests(true)
        .generate_comments(true)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("pot-sys: bindgen could not generate bindings from pot.h");

    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR is set by cargo")).join("bindings.rs");
    bindings.write_to_file(&out).expect("pot-sys: cannot write bindings.rs");
}
