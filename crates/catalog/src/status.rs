//! The words of a gRPC status as blocklab shows it, one home for the host's
//! client, its builtin workloads, its health checks and the SDK, so a status
//! reads the same whichever side of the component boundary met it.

/// gRPC's name for a status code (the table of grpc/doc/statuscodes.md).
pub fn code_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN_CODE")
}

/// A status of a call to `method`: `UNIMPLEMENTED (12) on
/// /grpc.testing.TestService/UnaryCall: <message>`. The method is left out
/// when empty (a status an adapter made up belongs to no call); an empty
/// message is said to be empty rather than shown as nothing after a colon,
/// since servers often send none (tonic's answer to an unknown method).
pub fn describe(code: u32, method: &str, message: &str) -> String {
    let mut text = format!("{} ({code})", code_name(code));
    if !method.is_empty() {
        text += &format!(" on {method}");
    }
    if message.is_empty() {
        text += " (the server sent no message)";
    } else {
        text += &format!(": {message}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_names_its_code_its_method_and_the_servers_message() {
        assert_eq!(
            describe(12, "/grpc.testing.TestService/UnaryCall", "unknown service"),
            "UNIMPLEMENTED (12) on /grpc.testing.TestService/UnaryCall: unknown service"
        );
        assert_eq!(
            describe(12, "/grpc.testing.TestService/UnaryCall", ""),
            "UNIMPLEMENTED (12) on /grpc.testing.TestService/UnaryCall (the server sent no message)"
        );
        assert_eq!(
            describe(3, "", "bad batch"),
            "INVALID_ARGUMENT (3): bad batch"
        );
        assert_eq!(describe(99, "/a/b", "x"), "UNKNOWN_CODE (99) on /a/b: x");
    }
}
