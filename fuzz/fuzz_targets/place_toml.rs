//! libFuzzer's entry for `strata_fuzz_targets::place_toml`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz_targets::place_toml(data));
