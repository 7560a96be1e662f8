public import CFileCoord
import FCBridge
import FileCoordination
import Foundation

// filecoord_presenter_*: a BridgePresenter whose events go to a struct of C callbacks. The callbacks run on the
// presenter's queue (a thread of the library's), one at a time, in the arbiter's order (filecoord.h).

/// The C callbacks, copied from the caller's struct up to its `size` (members past it are absent).
private func copyCallbacks(_ given: UnsafePointer<filecoord_presenter_callbacks>) -> filecoord_presenter_callbacks {
    var callbacks = filecoord_presenter_callbacks()
    let size = min(given.pointee.size, MemoryLayout<filecoord_presenter_callbacks>.size)
    withUnsafeMutableBytes(of: &callbacks) { destination in
        destination.copyMemory(from: UnsafeRawBufferPointer(start: given, count: size))
    }
    return callbacks
}

/// The callbacks a presenter declares: those it has a function for.
private func declared(_ callbacks: filecoord_presenter_callbacks) -> FilePresenterCallbacks {
    var declared: FilePresenterCallbacks = []
    if callbacks.relinquish_to_reader != nil { declared.insert(.relinquishToReader) }
    if callbacks.relinquish_to_writer != nil { declared.insert(.relinquishToWriter) }
    if callbacks.save_presented_item_changes != nil { declared.insert(.savePresentedItemChanges) }
    if callbacks.accommodate_presented_item_deletion != nil { declared.insert(.accommodatePresentedItemDeletion) }
    if callbacks.accommodate_presented_subitem_deletion != nil {
        declared.insert(.accommodatePresentedSubitemDeletion)
    }
    if callbacks.presented_item_did_move != nil { declared.insert(.presentedItemDidMove) }
    if callbacks.presented_item_did_change != nil { declared.insert(.presentedItemDidChange) }
    if callbacks.presented_subitem_did_change != nil { declared.insert(.presentedSubitemDidChange) }
    if callbacks.presented_subitem_did_appear != nil { declared.insert(.presentedSubitemDidAppear) }
    if callbacks.presented_subitem_did_move != nil { declared.insert(.presentedSubitemDidMove) }
    if callbacks.presented_item_did_gain_version != nil { declared.insert(.presentedItemDidGainVersion) }
    if callbacks.presented_item_did_lose_version != nil { declared.insert(.presentedItemDidLoseVersion) }
    if callbacks.presented_item_did_resolve_conflict_version != nil {
        declared.insert(.presentedItemDidResolveConflictVersion)
    }
    return declared
}

/// The C callbacks and their context, as one value the presenter's handler captures.
// @unchecked: C function pointers and the caller's context, which the C API documents as called from the
// library's threads; nothing here is mutated.
private struct CCallbacks: @unchecked Sendable {
    let callbacks: filecoord_presenter_callbacks
    let context: UnsafeMutableRawPointer?

    /// Calls the C function for `event`; returns its refusal, if it refused.
    func deliver(_ event: PresenterEvent) -> PresenterRefusal? {
        let answer: Int32
        switch event {
        case .relinquishToReader:
            callbacks.relinquish_to_reader?(context)
            return nil
        case .relinquishToWriter:
            callbacks.relinquish_to_writer?(context)
            return nil
        case .reacquire(let afterWriter):
            callbacks.reacquire?(context, afterWriter ? 1 : 0)
            return nil
        case .savePresentedItemChanges:
            answer = callbacks.save_presented_item_changes?(context) ?? 0
        case .accommodatePresentedItemDeletion:
            answer = callbacks.accommodate_presented_item_deletion?(context) ?? 0
        case .accommodatePresentedSubitemDeletion(let path):
            answer = callbacks.accommodate_presented_subitem_deletion.map { call in call(context, path) } ?? 0
        case .presentedItemDidMove(let path):
            callbacks.presented_item_did_move?(context, path)
            return nil
        case .presentedItemDidChange:
            callbacks.presented_item_did_change?(context)
            return nil
        case .presentedSubitemDidChange(let path):
            callbacks.presented_subitem_did_change?(context, path)
            return nil
        case .presentedSubitemDidAppear(let path):
            callbacks.presented_subitem_did_appear?(context, path)
            return nil
        case .presentedSubitemDidMove(let from, let to):
            callbacks.presented_subitem_did_move?(context, from, to)
            return nil
        case .presentedItemDidGainVersion:
            callbacks.presented_item_did_gain_version?(context)
            return nil
        case .presentedItemDidLoseVersion:
            callbacks.presented_item_did_lose_version?(context)
            return nil
        case .presentedItemDidResolveConflictVersion:
            callbacks.presented_item_did_resolve_conflict_version?(context)
            return nil
        case .presentedSubitemDidGainVersion, .presentedSubitemDidLoseVersion,
            .presentedSubitemDidResolveConflictVersion:
            return nil
        }
        guard answer != 0 else { return nil }
        return PresenterRefusal(code: Int(answer), message: "The presenter refused (\(event.name) answered \(answer)).")
    }
}

@_cdecl("filecoord_presenter_add")
public func filecoord_presenter_add(
    _ pathArgument: UnsafePointer<CChar>?,
    _ callbacks: UnsafePointer<filecoord_presenter_callbacks>?,
    _ context: UnsafeMutableRawPointer?,
    _ timeoutSeconds: Double,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> OpaquePointer? {
    let path: String
    switch string(pathArgument, "path") {
    case .failure(let failure):
        _ = report(failure, error)
        return nil
    case .success(let value): path = value
    }
    guard let callbacks else {
        _ = report(BridgeError(.invalidArgument, "callbacks is NULL."), error)
        return nil
    }
    let copied = CCallbacks(callbacks: copyCallbacks(callbacks), context: context)
    let presenter = BridgePresenter.register(path: path, callbacks: declared(copied.callbacks)) { event in
        copied.deliver(event)
    }
    // A coordinated read on the presenter's behalf is granted only once the arbiter has registered it. It waits
    // behind a write claim on the item, so it is bounded by the caller's timeout (none when 0 or less).
    let barrier = Coordination.access(
        [CoordinatedItem(path: path, access: .read(.withoutChanges))],
        settings: CallSettings(timeout: waitLimit(seconds: timeoutSeconds)),
        coordinator: NSFileCoordinator(filePresenter: presenter)
    ) { _ in }
    if case .failure(let failure) = barrier {
        presenter.remove()
        _ = report(failure, error)
        return nil
    }
    return Handle.make(PresenterBox(presenter))
}

@_cdecl("filecoord_presenter_copy_path")
public func filecoord_presenter_copy_path(_ presenter: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let presenter else { return nil }
    return strdup(Handle.get(presenter, as: PresenterBox.self).presenter.path)
}

@_cdecl("filecoord_presenter_remove")
public func filecoord_presenter_remove(_ presenter: OpaquePointer?) {
    guard let presenter else { return }
    Handle.take(presenter, as: PresenterBox.self).presenter.remove()
}
