public import FCCore

extension RequestID {
    /// Set in the request ids of messages relayed for another host (issue 41), so that they never meet the
    /// arbiter's own (which count up from 1).
    public static let relayBit: UInt64 = 1 << 63
}

extension SessionRouter {
    /// Delivers a message another host's arbiter sent to one of this daemon's presenters (issue 41,
    /// docs/ARCHITECTURE.md §15.1), as if this arbiter had sent it: in order with the presenter's other messages,
    /// respelled for its client like them.
    ///
    /// `message.presenter` is the presenter's global id (the one this daemon published); its client, claim and
    /// request are set here. A message that needs a reply gets a relay request id (``RequestID/relayBit``), whose
    /// answer comes back in ``Routed/relayReplies`` instead of reaching the arbiter; the arbiter never hears of a
    /// relayed message. A reacquire names the relay request id of the relinquish it follows.
    ///
    /// - Returns: `nil` when the presenter is gone; else the effects and the relay request id (`nil` for a message
    ///   that needs no reply).
    public func relay(_ message: PresenterMessage) -> (routed: Routed, request: RequestID?)? {
        guard let (owner, _) = presenterOwner[message.presenter] else { return nil }
        var message = message
        message.client = owner
        message.claim = nil
        message.request = nil
        if message.kind.needsReply {
            nextRelay += 1
            let request = RequestID(RequestID.relayBit | nextRelay)
            message.request = request
            relayed[request] = message.presenter
        }
        return (route([.message(message)]), message.request)
    }

    /// How many relayed messages wait for their presenter's reply (tests and dumps).
    public var openRelayCount: Int { relayed.count }
}
