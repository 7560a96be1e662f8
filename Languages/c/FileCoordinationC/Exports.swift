public import CFileCoord
import FCBridge
import FCToolkit
import FileCoordination
import Foundation

// The functions of filecoord.h (which documents them), exported with their C names. Nothing here may trap on bad
// input: a NULL or empty argument is FILECOORD_ERR_INVALID_ARGUMENT.

// MARK: Errors

@_cdecl("filecoord_error_code")
public func filecoord_error_code(_ error: OpaquePointer?) -> Int32 {
    guard let error else { return 0 }
    return Handle.get(error, as: ErrorBox.self).code
}

@_cdecl("filecoord_error_message")
public func filecoord_error_message(_ error: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let error else { return nil }
    return UnsafePointer(Handle.get(error, as: ErrorBox.self).message)
}

@_cdecl("filecoord_error_errno")
public func filecoord_error_errno(_ error: OpaquePointer?) -> Int32 {
    guard let error else { return 0 }
    return Handle.get(error, as: ErrorBox.self).errno
}

@_cdecl("filecoord_error_free")
public func filecoord_error_free(_ error: OpaquePointer?) {
    guard let error else { return }
    _ = Handle.take(error, as: ErrorBox.self)
}

@_cdecl("filecoord_free")
public func filecoord_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

// MARK: Coordinators

@_cdecl("filecoord_coordinator_new")
public func filecoord_coordinator_new() -> OpaquePointer? {
    Handle.make(CoordinatorBox())
}

@_cdecl("filecoord_coordinator_set_timeout")
public func filecoord_coordinator_set_timeout(_ coordinator: OpaquePointer?, _ seconds: Double) {
    guard let coordinator else { return }
    let timeout = waitLimit(seconds: seconds)
    Handle.get(coordinator, as: CoordinatorBox.self).timeout.withLock { $0 = timeout }
}

@_cdecl("filecoord_coordinator_set_nonblocking")
public func filecoord_coordinator_set_nonblocking(_ coordinator: OpaquePointer?, _ nonblocking: Int32) {
    guard let coordinator else { return }
    Handle.get(coordinator, as: CoordinatorBox.self).nonblocking.withLock { $0 = nonblocking != 0 }
}

/// A C timeout in seconds as a wait's limit: none for 0 or less (or not a number), as filecoord.h says.
func waitLimit(seconds: Double) -> Duration? {
    seconds > 0 && seconds.isFinite ? .milliseconds(Int64(min(seconds, 1e9) * 1_000)) : nil
}

@_cdecl("filecoord_coordinator_set_purpose")
public func filecoord_coordinator_set_purpose(
    _ coordinator: OpaquePointer?,
    _ purpose: UnsafePointer<CChar>?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let coordinator else { return report(BridgeError(.invalidArgument, "coordinator is NULL."), error) }
    let box = Handle.get(coordinator, as: CoordinatorBox.self)
    switch string(purpose, "purpose") {
    case .failure(let failure): return report(failure, error)
    case .success(let purpose):
        // Apple's purposeIdentifier traps when set twice: refused here instead.
        let first = box.purpose.withLock { current in
            defer { if current == nil { current = purpose } }
            return current == nil
        }
        guard first else { return report(BridgeError(.invalidArgument, "The purpose is already set."), error) }
        box.coordinator.purposeIdentifier = purpose
        return 0
    }
}

@_cdecl("filecoord_coordinator_copy_purpose")
public func filecoord_coordinator_copy_purpose(_ coordinator: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let coordinator else { return nil }
    return strdup(Handle.get(coordinator, as: CoordinatorBox.self).coordinator.purposeIdentifier)
}

@_cdecl("filecoord_coordinator_cancel")
public func filecoord_coordinator_cancel(_ coordinator: OpaquePointer?) {
    guard let coordinator else { return }
    Handle.get(coordinator, as: CoordinatorBox.self).coordinator.cancel()
}

@_cdecl("filecoord_coordinator_free")
public func filecoord_coordinator_free(_ coordinator: OpaquePointer?) {
    guard let coordinator else { return }
    _ = Handle.take(coordinator, as: CoordinatorBox.self)
}

// MARK: Coordinated access

/// The items of a call, or why they are wrong.
private func items(_ items: UnsafePointer<filecoord_item>?, _ count: Int) -> Result<[CoordinatedItem], BridgeError> {
    guard let items, count > 0 else { return .failure(BridgeError(.invalidArgument, "No item to coordinate.")) }
    var result: [CoordinatedItem] = []
    for index in 0..<count {
        let item = items[index]
        switch string(item.path, "items[\(index)].path") {
        case .failure(let failure): return .failure(failure)
        case .success(let path):
            let access: CoordinatedItem.Access =
                item.write != 0
                ? .write(NSFileCoordinator.WritingOptions(rawValue: UInt(item.options)))
                : .read(NSFileCoordinator.ReadingOptions(rawValue: UInt(item.options)))
            result.append(CoordinatedItem(path: path, access: access))
        }
    }
    return .success(result)
}

/// Runs `accessor` with C strings of `paths`, freed after it returns.
private func callAccessor(_ accessor: filecoord_accessor, _ context: UnsafeMutableRawPointer?, _ paths: [String]) {
    let strings: [UnsafePointer<CChar>?] = paths.map { UnsafePointer(strdup($0)) }
    defer { for string in strings { free(UnsafeMutableRawPointer(mutating: string)) } }
    strings.withUnsafeBufferPointer { buffer in
        accessor(context, buffer.baseAddress, buffer.count)
    }
}

private func coordinate(
    _ coordinator: OpaquePointer?,
    _ parsed: Result<[CoordinatedItem], BridgeError>,
    _ accessor: filecoord_accessor?,
    _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let accessor else { return report(BridgeError(.invalidArgument, "accessor is NULL."), error) }
    let list: [CoordinatedItem]
    switch parsed {
    case .failure(let failure): return report(failure, error)
    case .success(let items): list = items
    }
    let box = coordinator.map { Handle.get($0, as: CoordinatorBox.self) }
    let outcome = Coordination.access(list, settings: box?.settings ?? CallSettings(), coordinator: box?.coordinator) {
        paths in
        callAccessor(accessor, context, paths)
    }
    if case .failure(let failure) = outcome { return report(failure, error) }
    return 0
}

private func single(
    _ path: UnsafePointer<CChar>?,
    write: Bool,
    _ options: UInt32
) -> Result<
    [CoordinatedItem], BridgeError
> {
    string(path, "path").map { path in
        [
            CoordinatedItem(
                path: path,
                access: write
                    ? .write(NSFileCoordinator.WritingOptions(rawValue: UInt(options)))
                    : .read(NSFileCoordinator.ReadingOptions(rawValue: UInt(options)))
            )
        ]
    }
}

@_cdecl("filecoord_read")
public func filecoord_read(
    _ coordinator: OpaquePointer?,
    _ path: UnsafePointer<CChar>?,
    _ options: UInt32,
    _ accessor: filecoord_accessor?,
    _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    coordinate(coordinator, single(path, write: false, options), accessor, context, error)
}

@_cdecl("filecoord_write")
public func filecoord_write(
    _ coordinator: OpaquePointer?,
    _ path: UnsafePointer<CChar>?,
    _ options: UInt32,
    _ accessor: filecoord_accessor?,
    _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    coordinate(coordinator, single(path, write: true, options), accessor, context, error)
}

@_cdecl("filecoord_coordinate")
public func filecoord_coordinate(
    _ coordinator: OpaquePointer?,
    _ list: UnsafePointer<filecoord_item>?,
    _ count: Int,
    _ accessor: filecoord_accessor?,
    _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    coordinate(coordinator, items(list, count), accessor, context, error)
}

// MARK: Claims held between calls

@_cdecl("filecoord_claim_begin")
public func filecoord_claim_begin(
    _ coordinator: OpaquePointer?,
    _ list: UnsafePointer<filecoord_item>?,
    _ count: Int,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> OpaquePointer? {
    let parsed: [CoordinatedItem]
    switch items(list, count) {
    case .failure(let failure):
        _ = report(failure, error)
        return nil
    case .success(let items): parsed = items
    }
    let box = coordinator.map { Handle.get($0, as: CoordinatorBox.self) }
    let settings = box?.settings ?? CallSettings()
    let coordinatorObject = box?.coordinator
    let granted = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let result = Locked<Result<ClaimBox, BridgeError>?>(nil)
    // The claim is held by a thread of its own for as long as the caller wants, whatever thread it ends from.
    let holder = Thread {
        let outcome = Coordination.access(parsed, settings: settings, coordinator: coordinatorObject) { paths in
            let claim = ClaimBox(paths: paths, release: release, finished: finished)
            result.withLock { $0 = .success(claim) }
            granted.signal()
            release.wait()
        }
        if case .failure(let failure) = outcome {
            result.withLock { $0 = .failure(failure) }
            granted.signal()
        }
        finished.signal()
    }
    holder.name = "filecoord.claim"
    holder.start()
    granted.wait()
    switch result.withLock({ $0 }) {
    case .success(let claim)?:
        return Handle.make(claim)
    case .failure(let failure)?:
        finished.wait()
        _ = report(failure, error)
        return nil
    case nil:
        _ = report(BridgeError(.other, "The claim ended without an outcome."), error)
        return nil
    }
}

@_cdecl("filecoord_claim_count")
public func filecoord_claim_count(_ claim: OpaquePointer?) -> Int {
    guard let claim else { return 0 }
    return Handle.get(claim, as: ClaimBox.self).paths.count
}

@_cdecl("filecoord_claim_path")
public func filecoord_claim_path(_ claim: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    guard let claim else { return nil }
    let paths = Handle.get(claim, as: ClaimBox.self).paths
    guard index >= 0, index < paths.count else { return nil }
    return UnsafePointer(paths[index])
}

@_cdecl("filecoord_claim_end")
public func filecoord_claim_end(_ claim: OpaquePointer?) {
    guard let claim else { return }
    Handle.take(claim, as: ClaimBox.self).end()
}

// MARK: Operations

/// The settings and the coordinator of a call made with `coordinator` (NULL: defaults and a coordinator of its own):
/// the caller's coordinator itself, so that its purpose and its cancellation apply, as filecoord.h says.
private func callCoordinator(
    _ coordinator: OpaquePointer?
) -> (settings: CallSettings, coordinator: NSFileCoordinator?) {
    guard let coordinator else { return (CallSettings(), nil) }
    let box = Handle.get(coordinator, as: CoordinatorBox.self)
    return (box.settings, box.coordinator)
}

@_cdecl("filecoord_move")
public func filecoord_move(
    _ coordinator: OpaquePointer?,
    _ source: UnsafePointer<CChar>?,
    _ destination: UnsafePointer<CChar>?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    let outcome = string(source, "source").flatMap { source in
        string(destination, "destination").flatMap { destination in
            let call = callCoordinator(coordinator)
            return Coordination.move(source, to: destination, settings: call.settings, coordinator: call.coordinator)
        }
    }
    if case .failure(let failure) = outcome { return report(failure, error) }
    return 0
}

@_cdecl("filecoord_delete")
public func filecoord_delete(
    _ coordinator: OpaquePointer?,
    _ path: UnsafePointer<CChar>?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    let call = callCoordinator(coordinator)
    let outcome = string(path, "path").flatMap {
        Coordination.delete($0, settings: call.settings, coordinator: call.coordinator)
    }
    if case .failure(let failure) = outcome { return report(failure, error) }
    return 0
}

@_cdecl("filecoord_add_conflict_version")
public func filecoord_add_conflict_version(
    _ coordinator: OpaquePointer?,
    _ path: UnsafePointer<CChar>?,
    _ contentsPath: UnsafePointer<CChar>?,
    _ savingComputer: UnsafePointer<CChar>?,
    _ error: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    let call = callCoordinator(coordinator)
    let outcome = string(path, "path").flatMap { path in
        string(contentsPath, "contents_path").flatMap { contents in
            string(savingComputer, "saving_computer").flatMap { computer in
                Coordination.addConflictVersion(
                    of: path,
                    contentsOf: contents,
                    savingComputer: computer,
                    settings: call.settings,
                    coordinator: call.coordinator
                )
            }
        }
    }
    if case .failure(let failure) = outcome { return report(failure, error) }
    return 0
}
