//! Peak resident memory of this process, and the page faults it has taken, where the platform
//! reports them.
//!
//! Invariant: on Linux the peak is reset by writing `5` to `/proc/self/clear_refs` and read as
//! `VmHWM` from `/proc/self/status`, and the faults are the minor and major fault counts of
//! `/proc/self/stat`; anywhere a step fails, callers get `false` or `None`, never a guessed
//! number.

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

/// The page faults (minor and major) this process has taken so far, if the platform reports
/// them.
pub(crate) fn page_faults() -> Option<u64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    parse_faults(&stat)
}

/// The minor plus major fault counts of a `/proc/<pid>/stat` line: fields 10 and 12, counted
/// after the command name, which is in parentheses and may hold spaces or parentheses itself.
fn parse_faults(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Field 3 (the state) is the first after the name.
    let minor = fields.get(10 - 3)?.parse::<u64>().ok()?;
    let major = fields.get(12 - 3)?.parse::<u64>().ok()?;
    minor.checked_add(major)
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
    fn parses_minor_and_major_faults_after_the_name() {
        let stat = "4242 (a (b) c) R 1 2 3 4 5 6 1700 8 30 9 10 11";
        assert_eq!(parse_faults(stat), Some(1730));
        assert_eq!(parse_faults("4242 (short) R 1 2"), None);
        assert_eq!(parse_faults("4242 (x) R 1 2 3 4 5 6 many 8 30"), None);
        assert!(page_faults().is_some_and(|n| n > 0));
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
