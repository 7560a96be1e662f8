import Testing
@testable import FCCore
@Test func smoke() { #expect(Arbiter().snapshot().nodeCount == 1) }
