import Testing

@testable import FCCluster

/// The time to live a host asks etcd for its session: whole seconds, rounded up, so that the session outlives the
/// host's fence (which counts the policy's time to live). Until stop 67 a 2.5-s policy asked 2 s and fenced at
/// 2.375 s: etcd could expire the session, and another host grant, while this one still did (found by a read-only
/// review).
@Suite struct SessionTTLTests {
    @Test func theTimeToLiveAskedIsRoundedUp() {
        #expect(ClusterHost.requestedTTLSeconds(for: .seconds(10)) == 10)
        #expect(ClusterHost.requestedTTLSeconds(for: .milliseconds(2_500)) == 3)
        #expect(ClusterHost.requestedTTLSeconds(for: .milliseconds(1)) == 1)
        #expect(ClusterHost.requestedTTLSeconds(for: .zero) == 1)
    }
}
