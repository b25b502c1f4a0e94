//! libFuzzer's entry for `strata_fuzz_targets::game_script`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz_targets::game_script(data));
