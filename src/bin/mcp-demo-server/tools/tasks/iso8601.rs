//! Dates as the tasks of the test servers write them.

/// An instant as ISO 8601 in UTC with milliseconds (`2025-11-25T10:30:00.000Z`), as the tasks'
/// `createdAt` and `lastUpdatedAt` are written. Done by hand (Howard Hinnant's days-to-civil)
/// rather than with a date crate: it is the only date the test servers write (the benchmark's
/// echo server takes this file in too).
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let of_day = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
