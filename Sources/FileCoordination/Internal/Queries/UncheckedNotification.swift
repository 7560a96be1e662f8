import Foundation

/// A notification handed to the queue that posts it.
// @unchecked: its user info holds the query's immutable items and arrays of them.
struct UncheckedNotification: @unchecked Sendable {
    let value: Notification
    init(name: NSNotification.Name, object: AnyObject, userInfo: [String: Any]?) {
        value = Notification(name: name, object: object, userInfo: userInfo)
    }
}
