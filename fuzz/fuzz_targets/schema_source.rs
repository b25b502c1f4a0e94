//! libFuzzer's entry for `strata_fuzz_targets::schema_source`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz_targets::schema_source(data));
