// What the client's environment switches (docs/SEMANTICS.md §13.1, §13.4): leases on or off, and how long an
// unused lease is kept.

import Testing

@testable import FileCoordination

@Suite struct ConnectionPolicyTests {
    @Test("Leases are on unless FILECOORD_LEASES says off, in any of the usual spellings")
    func leasesAreOnUnlessTurnedOff() {
        #expect(ConnectionPolicy.fromEnvironment([:]).answersRecalls)
        for on in ["1", "on", "yes", "true", ""] {
            #expect(ConnectionPolicy.fromEnvironment(["FILECOORD_LEASES": on]).answersRecalls, "\(on)")
        }
        for off in ["0", "off", "OFF", "false", "False", "no"] {
            #expect(!ConnectionPolicy.fromEnvironment(["FILECOORD_LEASES": off]).answersRecalls, "\(off)")
        }
    }

    @Test("FILECOORD_LEASE_IDLE_RETURN is taken from 0.01 to 3600 s; any other value keeps the 2 s default")
    func theIdleReturnIsTakenOnlyInItsRange() {
        func period(_ value: String?) -> Duration {
            ConnectionPolicy.fromEnvironment(value.map { ["FILECOORD_LEASE_IDLE_RETURN": $0] } ?? [:])
                .leaseIdleReturn
        }
        #expect(period(nil) == .seconds(2))
        #expect(period("0.5") == .milliseconds(500))
        #expect(period("0.01") == .milliseconds(10))
        #expect(period("3600") == .seconds(3600))
        for outOfRange in ["0", "0.001", "-1", "3601", "1e9", "nan", "inf", "two", ""] {
            #expect(period(outOfRange) == .seconds(2), "\(outOfRange)")
        }
    }
}
