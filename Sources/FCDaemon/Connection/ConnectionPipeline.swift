import NIOCore

extension ChannelPipeline.SynchronousOperations {
    /// Adds the daemon's handlers of one client connection, in order: ``FrameChannelDecoder`` (bytes to frames,
    /// the partial-frame timeout), ``HandshakeHandler`` (peer check, connection cap, `Hello`), which adds the
    /// ``SessionHandler`` (dispatch) once the client said hello.
    ///
    /// - Parameter peerCredentials: the peer's credentials; the kernel's unless a test injects them.
    func addConnectionHandlers(
        host: ArbiterHost,
        peerCredentials: @escaping HandshakeHandler.PeerCredentialSource = HandshakeHandler.kernel
    ) throws {
        let decoder = FrameChannelDecoder(
            maximumFrameSize: host.configuration.maximumFrameSize,
            partialFrameTimeout: host.configuration.partialFrameTimeout
        )
        try addHandler(ByteToMessageHandler(decoder))
        try addHandler(HandshakeHandler(host: host, peerCredentials: peerCredentials))
    }
}
