public import FCCore
public import Logging

extension Logger {
    /// Logs an arbiter's record (`ArbiterEffect.log`) at its level, its metadata kept as swift-log metadata: the one
    /// mapping of the arbiter's log levels, for the daemon and the in-process arbiter alike.
    public func log(_ record: LogRecord) {
        log(level: Level(record.level), "\(record.message)", metadata: record.metadata.mapValues { .string($0) })
    }
}

extension Logger.Level {
    /// The swift-log level of an arbiter's log level.
    public init(_ level: LogLevel) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        }
    }
}
