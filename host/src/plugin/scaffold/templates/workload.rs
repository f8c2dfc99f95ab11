//! A blocklab workload plugin. Build it with `blocklab plugin build .`, run
//! it with `blocklab run --plugin PATH.wasm --workload get`, or its gRPC
//! workloads against your server with
//! `blocklab run --plugin PATH.wasm --workload unary --endpoint http://HOST:PORT`
//! (and `--param method=/package.Service/Method --param request=HEX`).

use blocklab_sdk::grpc::{self, Metadata};
use blocklab_sdk::{Info, Params, Plugin, Workload, env, kv, proto};

struct Workloads;

/// The params both gRPC workloads take beside `method` and `request`.
const CALL_PARAMS: &[(&str, &str, &str)] = &[
    (
        "metadata",
        "",
        "request metadata, `key=value` pairs separated by commas (e.g. authorization=Bearer token)",
    ),
    (
        "deadline_ms",
        "0",
        "the deadline of each unary call, or of the whole stream, ms (0: none but the arm's call_timeout_ms)",
    ),
    (
        "expect",
        "",
        "metadata the response must carry in its headers or trailers: keys, or `key=value`, separated by commas",
    ),
];

impl Plugin for Workloads {
    fn workloads() -> Vec<Info> {
        vec![
            Info::new("get", "one point read of a fixture row, committed")
                .param("keys", "1000", "fixture rows")
                .param("value-bytes", "100", "bytes per value")
                .uses("kv"),
            // The defaults call blocklab's own test server (`blocklab
            // target grpc-ingest`); name your service's method and give its
            // encoded request, e.g. written with `proto::Message`.
            Info::new("unary", "one unary call of your service; its response must be a protobuf message")
                .param("method", "/ingest.v1.Echo/Echo", "the full method name, /package.Service/Method")
                .param("request", "0a0568656c6c6f", "the encoded request, as hex (here EchoRequest { payload: \"hello\" })")
                .params(CALL_PARAMS)
                .uses("grpc"),
            Info::new("stream", "one request and its response on a bidirectional stream held for the run (a ping-pong)")
                .param("method", "/grpc.testing.TestService/FullDuplexCall", "the full method name of a bidirectional method that answers each request with one message")
                .param("request", "12020864", "the encoded request, as hex (here StreamingOutputCallRequest { response_parameters: [{ size: 100 }] })")
                .params(CALL_PARAMS)
                .uses("grpc"),
        ]
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        if name == "unary" || name == "stream" {
            let call = Spec::of(params)?;
            if name == "unary" {
                return Ok(Box::new(call));
            }
            let stream = call.options.open_stream(&call.method)?;
            // The server's headers come before its first message; checking
            // them here keeps the transactions to the messages alone.
            call.check(&stream.headers()?, None)?;
            return Ok(Box::new(PingPong {
                call,
                stream: Some(stream),
            }));
        }
        let keys = params.u64("keys")?;
        if keys == 0 {
            return Err("param `keys` must be at least 1".into());
        }
        let value_bytes = params.usize("value-bytes")?;
        let value = vec![b'x'; value_bytes];
        // The fixture, in transactions well under FoundationDB's 10 MB.
        let mut start = 0;
        while start < keys {
            let stop = keys.min(start + 1000);
            kv::transact(|tr| {
                for i in start..stop {
                    tr.set(&key(i), &value);
                }
                Ok(())
            })?;
            start = stop;
        }
        env::count("fixture-rows", keys as i64);
        Ok(Box::new(Get { keys, value_bytes }))
    }
}

struct Get {
    keys: u64,
    value_bytes: usize,
}

impl Workload for Get {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        // Keys come from env::random_u64: seeded by the plan, reproducible.
        let key = key(env::random_u64() % self.keys);
        let (value, retries) = kv::transact(|tr| tr.get(&key))?;
        match value {
            Some(v) if v.len() == self.value_bytes => Ok(retries),
            Some(v) => Err(format!(
                "key `{}` holds {} bytes, expected {}",
                String::from_utf8_lossy(&key),
                v.len(),
                self.value_bytes
            )),
            None => Err(format!(
                "key `{}` is missing",
                String::from_utf8_lossy(&key)
            )),
        }
    }
}

/// A gRPC workload's method, request, call options and expected metadata.
struct Spec {
    method: String,
    request: Vec<u8>,
    options: grpc::Call,
    expect: Vec<(String, Option<String>)>,
}

impl Spec {
    fn of(params: &Params) -> Result<Spec, String> {
        let request = hex(params.str("request")?)?;
        let mut options = grpc::Call::new();
        for (key, value) in pairs(params.str("metadata")?)? {
            options = options.metadata(key, value.unwrap_or_default());
        }
        match params.u64("deadline_ms")? {
            0 => {}
            ms => {
                options = options.deadline_ms(
                    u32::try_from(ms).map_err(|_| "param `deadline_ms` is too large".to_owned())?,
                )
            }
        }
        Ok(Spec {
            method: params.str("method")?.to_owned(),
            request,
            options,
            expect: pairs(params.str("expect")?)?,
        })
    }

    /// Fails unless every expected entry is in `headers` or `trailers`.
    fn check(&self, headers: &Metadata, trailers: Option<&Metadata>) -> Result<(), String> {
        for (key, value) in &self.expect {
            let found = headers
                .get_str(key)
                .or_else(|| trailers.and_then(|t| t.get_str(key)));
            match (found, value) {
                // Without trailers yet (a stream's come at its end), what
                // the headers lack is checked again then.
                (None, _) if trailers.is_none() => {}
                (None, _) => return Err(format!("the response carries no metadata `{key}`")),
                (Some(got), Some(want)) if got != want => {
                    return Err(format!(
                        "the response's metadata `{key}` is `{got}`, expected `{want}`"
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Workload for Spec {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        // A failed call's error reads, e.g.,
        // `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
        let reply = self.options.unary(&self.method, &self.request)?;
        for field in proto::fields(&reply.message) {
            field.map_err(|e| format!("the response is not a protobuf message: {e}"))?;
        }
        self.check(&reply.headers, Some(&reply.trailers))?;
        env::count("response-bytes", reply.message.len() as i64);
        Ok(0)
    }
}

/// A stream opened in setup and held for the run: each transaction sends
/// the request and waits for its answer.
struct PingPong {
    call: Spec,
    stream: Option<grpc::Stream>,
}

impl Workload for PingPong {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let stream = self.stream.as_ref().ok_or("the stream ended")?;
        stream.send(&self.call.request)?;
        match stream.recv()? {
            Some(message) => {
                env::count("response-bytes", message.len() as i64);
                Ok(0)
            }
            None => Err(format!(
                "{} ended the stream instead of answering",
                self.call.method
            )),
        }
    }

    /// Untimed, after the measured window: half-closes the stream, reads it
    /// to its end and checks the trailers, so the stream is not a leak.
    fn teardown(&mut self) -> Result<(), String> {
        let Some(stream) = self.stream.take() else {
            return Ok(());
        };
        stream.close_send();
        while stream.recv()?.is_some() {}
        let trailers = stream.trailers().unwrap_or_default();
        self.call.check(&stream.headers()?, Some(&trailers))
    }
}

/// `a=1,b,c=3` as `[(a, Some(1)), (b, None), (c, Some(3))]`.
fn pairs(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_owned(), Some(v.trim().to_owned())))
            }
            Some(_) => Err(format!("`{item}` has no key before its `=`")),
            None => Ok((item.to_owned(), None)),
        })
        .collect()
}

/// Bytes from hex text (`0a05...`).
fn hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return Err(format!(
            "param `request` `{text}` has an odd number of hex digits"
        ));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| format!("param `request` `{text}` is not hex"))
        })
        .collect()
}

/// Row `i`'s key; 8 digits keep key order equal to row order.
fn key(i: u64) -> Vec<u8> {
    format!("example/get/{i:08}").into_bytes()
}

blocklab_sdk::export_plugin!(Workloads);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_row_order() {
        assert_eq!(key(42), b"example/get/00000042".to_vec());
        assert!(key(9) < key(10));
    }

    #[test]
    fn params_read_as_pairs_and_hex() {
        assert_eq!(
            pairs("authorization=Bearer t, x-a").unwrap(),
            vec![
                ("authorization".into(), Some("Bearer t".into())),
                ("x-a".into(), None)
            ]
        );
        assert!(pairs("=v").is_err());
        assert_eq!(hex("0a05").unwrap(), vec![0x0a, 0x05]);
        assert!(hex("0a0").is_err());
    }
}
