import FCCore
import FCSystem

extension ItemIdentity {
    /// The core's opaque identity of the file `stat` described (issue 26).
    init(_ identity: FileIdentity) {
        self.init(device: identity.device, inode: identity.inode)
    }
}
