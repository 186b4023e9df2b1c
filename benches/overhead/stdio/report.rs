//! The stdio section of the report: per client, the median and best of its repetitions, its
//! ratios against `raw`, `one-hop` (the raw client behind one actor: the floor of an actor
//! design) and `rmcp`, each taken within one repetition, and what a call costs the client's
//! process: CPU time, and write syscalls (how well writes are batched under 64 callers).

use std::collections::HashMap;

use serde_json::Value;

use super::{label, CALLERS, CLIENTS};
use crate::plan::Plan;
use crate::report::{num, Report};
use crate::stats::{max, median, min, ratios};

/// Writes the stdio table and its summary keys from every repetition's child results.
pub(crate) fn report(report: &mut Report, plan: &Plan, stdio: &HashMap<&str, Vec<Value>>) {
    let per = |client: &str, key: &str| -> Vec<f64> {
        stdio
            .get(client)
            .map(|runs| runs.iter().map(|r| num(r, key)).collect())
            .unwrap_or_default()
    };
    let raw_p50 = per("raw", "serial_p50_us");
    let raw_tput = per("raw", "concurrent_calls_per_s");
    let rmcp_tput = per("rmcp", "concurrent_calls_per_s");
    let hop_p50 = per("one-hop", "serial_p50_us");
    let hop_tput = per("one-hop", "concurrent_calls_per_s");
    report.line(format!(
        "### Call overhead over stdio ({} repetitions, interleaved; median [best])\n",
        plan.reps
    ));
    report.line(format!(
        "{} sequential `tools/call` echo round trips with 100 bytes of text; {} calls by {CALLERS} concurrent callers. Ratios are taken within each repetition.\n",
        plan.serial, plan.concurrent
    ));
    report.line("| client | serial p50 µs | p99 µs | p50 vs raw | vs one-hop | calls/s (64 callers) | vs raw | vs one-hop | vs rmcp | CPU µs/call serial / 64 callers | writes/call 64 callers | peak RSS MiB |");
    report.line("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for client in CLIENTS {
        let p50 = per(client, "serial_p50_us");
        let p99 = per(client, "serial_p99_us");
        let tput = per(client, "concurrent_calls_per_s");
        let rss = per(client, "rss_peak_kb");
        let r_lat = ratios(&p50, &raw_p50);
        let r_tput = ratios(&tput, &raw_tput);
        let r_rmcp = ratios(&tput, &rmcp_tput);
        let h_lat = ratios(&p50, &hop_p50);
        let h_tput = ratios(&tput, &hop_tput);
        let cpu_serial = per(client, "serial_cpu_us_per_call");
        let cpu_conc = per(client, "concurrent_cpu_us_per_call");
        let writes = per(client, "concurrent_writes_per_call");
        report.line(format!(
            "| {} | {:.1} [{:.1}] | {:.1} [{:.1}] | {:.2}× [{:.2}×] | {:.2}× [{:.2}×] | {:.0}k [{:.0}k] | {:.2}× [{:.2}×] | {:.2}× [{:.2}×] | {:.1}× [{:.1}×] | {:.1} / {:.1} | {:.3} | {:.1} |",
            label(client),
            median(&p50),
            min(&p50),
            median(&p99),
            min(&p99),
            median(&r_lat),
            min(&r_lat),
            median(&h_lat),
            min(&h_lat),
            median(&tput) / 1e3,
            max(&tput) / 1e3,
            median(&r_tput),
            max(&r_tput),
            median(&h_tput),
            max(&h_tput),
            median(&r_rmcp),
            max(&r_rmcp),
            median(&cpu_serial),
            median(&cpu_conc),
            median(&writes),
            median(&rss) / 1024.0,
        ));
        let key = client.replace('-', "_");
        report.put(&format!("stdio_{key}_serial_p50_us"), median(&p50), 2);
        report.put(&format!("stdio_{key}_serial_p50_us_best"), min(&p50), 2);
        report.put(&format!("stdio_{key}_serial_p99_us"), median(&p99), 2);
        report.put(&format!("stdio_{key}_calls_per_s"), median(&tput), 0);
        report.put(&format!("stdio_{key}_calls_per_s_best"), max(&tput), 0);
        report.put(
            &format!("stdio_{key}_serial_cpu_us_per_call"),
            median(&cpu_serial),
            2,
        );
        report.put(
            &format!("stdio_{key}_concurrent_cpu_us_per_call"),
            median(&cpu_conc),
            2,
        );
        report.put(
            &format!("stdio_{key}_concurrent_writes_per_call"),
            median(&writes),
            4,
        );
        report.put(
            &format!("stdio_{key}_peak_rss_bytes"),
            median(&rss) * 1024.0,
            0,
        );
        // The headline ratios: ours (direct and via the Supervisor) and rmcp against raw, and
        // ours against the one-hop floor.
        match client {
            "ours" => {
                report.put("serial_p50_ratio_vs_one_hop", median(&h_lat), 3);
                report.put("serial_p50_ratio_vs_one_hop_best", min(&h_lat), 3);
                report.put("concurrent_throughput_ratio_vs_one_hop", median(&h_tput), 3);
                report.put(
                    "concurrent_throughput_ratio_vs_one_hop_best",
                    max(&h_tput),
                    3,
                );
                report.put("serial_p50_ratio_vs_raw", median(&r_lat), 3);
                report.put("serial_p50_ratio_vs_raw_best", min(&r_lat), 3);
                report.put("concurrent_throughput_ratio_vs_raw", median(&r_tput), 3);
                report.put("concurrent_throughput_ratio_vs_raw_best", max(&r_tput), 3);
                report.put("concurrent_throughput_ratio_vs_rmcp", median(&r_rmcp), 3);
                report.put("concurrent_throughput_ratio_vs_rmcp_best", max(&r_rmcp), 3);
            }
            "ours-sup" => {
                report.put("serial_p50_ratio_vs_raw_via_supervisor", median(&r_lat), 3);
                report.put(
                    "concurrent_throughput_ratio_vs_raw_via_supervisor",
                    median(&r_tput),
                    3,
                );
                report.put(
                    "serial_p50_ratio_vs_one_hop_via_supervisor",
                    median(&h_lat),
                    3,
                );
                report.put(
                    "concurrent_throughput_ratio_vs_one_hop_via_supervisor",
                    median(&h_tput),
                    3,
                );
            }
            "one-hop" => {
                report.put("one_hop_serial_p50_ratio_vs_raw", median(&r_lat), 3);
                report.put(
                    "one_hop_concurrent_throughput_ratio_vs_raw",
                    median(&r_tput),
                    3,
                );
            }
            "rmcp" => {
                report.put("rmcp_serial_p50_ratio_vs_raw", median(&r_lat), 3);
                report.put(
                    "rmcp_concurrent_throughput_ratio_vs_raw",
                    median(&r_tput),
                    3,
                );
            }
            _ => {}
        }
    }
    report.line(String::new());
}
