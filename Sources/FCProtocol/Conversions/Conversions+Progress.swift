public import FCCore
public import Foundation

// File progress on the wire (issue 44; docs/PROTOCOL.md §12).

extension Filecoord_V1_ProgressState {
    /// The longest string a progress state may carry, in bytes of UTF-8.
    public static let maximumStringBytes = 1024

    /// Checks what a client sent: strings within ``maximumStringBytes``, a fraction that is a number.
    ///
    /// - Throws: ``ProtocolError`` `.invalidValue`, naming the field.
    public func validate() throws(ProtocolError) {
        for (name, value) in [
            ("kind", kind), ("file_operation_kind", fileOperationKind), ("localized_description", localizedDescription),
            ("localized_additional_description", localizedAdditionalDescription),
        ] where value.utf8.count > Self.maximumStringBytes {
            throw ProtocolError(
                .invalidValue,
                "ProgressState.\(name) is \(value.utf8.count) bytes; at most \(Self.maximumStringBytes)"
            )
        }
        guard fractionCompleted.isFinite else {
            throw ProtocolError(.invalidValue, "ProgressState.fraction_completed is not a number")
        }
    }
}

extension Filecoord_V1_Frame {
    /// A `ProgressPublish` for the client's publication `publication` about `path`.
    public static func progressPublish(
        _ publication: UInt64,
        path: ItemPath,
        state: Filecoord_V1_ProgressState
    )
        -> Filecoord_V1_Frame
    {
        var message = Filecoord_V1_ProgressPublish()
        message.publicationID = publication
        message.path = encodePath(path)
        message.state = state
        return Filecoord_V1_Frame(.progressPublish(message))
    }

    /// A `ProgressSubscribe` for the client's subscription `subscription` at `path`.
    public static func progressSubscribe(_ subscription: UInt64, path: ItemPath) -> Filecoord_V1_Frame {
        var message = Filecoord_V1_ProgressSubscribe()
        message.subscriptionID = subscription
        message.path = encodePath(path)
        return Filecoord_V1_Frame(.progressSubscribe(message))
    }

    /// A `ProgressAppeared` telling a client's subscription `subscription` of `publication` (the daemon's id).
    public static func progressAppeared(
        subscription: UInt64,
        publication: UInt64,
        path: ItemPath,
        state: Filecoord_V1_ProgressState
    ) -> Filecoord_V1_Frame {
        var message = Filecoord_V1_ProgressAppeared()
        message.subscriptionID = subscription
        message.publicationID = publication
        message.path = encodePath(path)
        message.state = state
        return Filecoord_V1_Frame(.progressAppeared(message))
    }
}

extension Filecoord_V1_QueryItem {
    /// A path's bytes for a query message (docs/PROTOCOL.md §13).
    public static func encode(_ path: ItemPath) -> Data { encodePath(path) }
}
