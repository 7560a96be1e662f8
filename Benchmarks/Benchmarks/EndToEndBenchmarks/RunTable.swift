import Foundation

// The README's end-to-end table, printed by the last benchmark of a run next to the ratios (RunResults), so that
// the README is rewritten from one run: `scripts/benchmark-table.sh` runs the suite and keeps this part.

extension RunResults {
    static let tableStart = "==== EndToEnd README table (begin) ===="
    static let tableEnd = "==== EndToEnd README table (end) ===="

    /// Markdown: each benchmark's p50 and its ratio to the baseline measured in the same run.
    static func table(_ results: [String: Double]) -> String {
        func value(_ name: String) -> Double { results["EndToEnd." + name] ?? .nan }
        let bare = value("bareSocketRoundTrip")
        let flock = value("openFlockClose")
        let threeParty = value("bareThreePartyRoundTrip")
        let read = value("uncontendedRead")
        let rate = 1e9 / value("claimsPerSecond8Clients")
        let cpu = { (who: String) in
            results["EndToEnd.claimsPerSecond8Clients.\(who)CPUPerClaim"].map(format) ?? "not measured"
        }
        func against(_ name: String, _ baseline: Double, _ baselineName: String, target: String) -> String {
            "\(ratio(value(name) / baseline))x `\(baselineName)`" + (target.isEmpty ? "" : " (target \(target))")
        }
        let rows: [(String, String, String, String)] = [
            (
                "uncontendedRead", "`NSFileCoordinator().coordinate(readingItemAt:…)`, nobody else interested",
                format(read),
                against("uncontendedRead", bare, "bareSocketRoundTrip", target: "≤ 2x") + "; "
                    + "\(ratio(read / (flock + bare)))x `openFlockClose` + `bareSocketRoundTrip` (target < 1x)"
            ),
            (
                "uncontendedWrite", "`coordinate(writingItemAt:…)`, nobody else interested",
                format(value("uncontendedWrite")),
                against("uncontendedWrite", bare, "bareSocketRoundTrip", target: "≤ 2x")
            ),
            ("bareSocketRoundTrip", "32 bytes over a Unix socket, echoed by a thread", format(bare), "baseline"),
            ("openFlockClose", "`open`, `flock(LOCK_SH)`, `flock(LOCK_UN)`, `close`", format(flock), "baseline"),
            (
                "writeWithRelinquishingPresenter",
                "coordinated write; a presenter in another process relinquishes",
                format(value("writeWithRelinquishingPresenter")),
                against("writeWithRelinquishingPresenter", threeParty, "bareThreePartyRoundTrip", target: "≤ 2x")
            ),
            (
                "bareThreePartyRoundTrip", "client to relay thread to responder process and back, 32 bytes",
                format(threeParty), "baseline"
            ),
            (
                "claimsPerSecond8Clients", "8 client processes, coordinated reads of their own files",
                "\(Int(rate)) claims/s",
                "\(ratio(rate / (1e9 / read)))x one client's sequential `uncontendedRead` rate; CPU per claim: "
                    + "clients \(cpu("client")), daemon \(cpu("daemon"))"
            ),
            (
                "clientHotPath.uncontendedRead", "a read with the daemon in another process (its mallocs are gated)",
                format(value("clientHotPath.uncontendedRead")),
                against("clientHotPath.uncontendedRead", bare, "bareSocketRoundTrip", target: "")
            ),
            (
                "clientHotPath.uncontendedWrite", "a write with the daemon in another process (its mallocs are gated)",
                format(value("clientHotPath.uncontendedWrite")),
                against("clientHotPath.uncontendedWrite", bare, "bareSocketRoundTrip", target: "")
            ),
        ]
        var lines = [
            "", tableStart,
            "| benchmark | what it does | p50 | against the baseline of this run |",
            "|---|---|---|---|",
        ]
        for (name, what, p50, comparison) in rows {
            lines.append("| `EndToEnd.\(name)` | \(what) | \(p50) | \(comparison) |")
        }
        lines += [tableEnd, ""]
        return lines.joined(separator: "\n")
    }
}
