import Foundation

// Values of swift-corelibs-foundation's `Progress` API, which is not `Sendable`, carried between the progress
// center's threads under the rule each states (issue 44).

/// A `Progress` held by the center; read by the sampler on the center's queue, as the class's own fields allow.
// @unchecked: swift-corelibs-foundation's Progress is not Sendable; the center reads only its plain fields.
struct UncheckedProgress: @unchecked Sendable {
    let value: Progress
    init(_ value: Progress) { self.value = value }
}

/// A subscriber's unpublishing handler: called only on the center's delivery queue.
// @unchecked: Apple's UnpublishingHandler is not @Sendable; the center calls it on one serial queue.
struct UncheckedUnpublishing: @unchecked Sendable {
    let value: Progress.UnpublishingHandler
    init(_ value: @escaping Progress.UnpublishingHandler) { self.value = value }
}

/// A subscriber's publishing handler: called only on the center's delivery queue.
// @unchecked: Apple's PublishingHandler is not @Sendable; the center calls it on one serial queue.
struct UncheckedHandler: @unchecked Sendable {
    let value: Progress.PublishingHandler
    init(_ value: @escaping Progress.PublishingHandler) { self.value = value }
}
