//! Peak resident memory of this process, where the platform reports it.
//!
//! Invariant: on Linux the peak is reset by writing `5` to `/proc/self/clear_refs` and read as
//! `VmHWM` from `/proc/self/status`; anywhere either step fails, callers get `false` or `None`,
//! never a guessed number.

use std::fs;

/// Resets the peak resident set size to the current one; returns whether that worked.
pub(crate) fn reset_peak() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The peak resident set size since the last reset, in bytes, if the platform reports it.
pub(crate) fn peak_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// Finds the `VmHWM:  <n> kB` line of a `/proc/<pid>/status` text and returns `n` KiB in bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?;
    let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vm_hwm_in_kib() {
        let status = "Name:\tbench\nVmPeak:\t  99 kB\nVmHWM:\t   13512 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(13512 * 1024));
    }

    #[test]
    fn rejects_missing_or_odd_lines() {
        assert_eq!(parse_vm_hwm("VmRSS:\t 1 kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t 12 MB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t lots kB\n"), None);
    }

    #[test]
    fn reports_a_peak_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(reset_peak());
            assert!(peak_bytes().is_some_and(|bytes| bytes > 0));
        }
    }
}
