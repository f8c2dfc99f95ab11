//! Protocol Buffers' wire format, enough to write a request and read a
//! response by hand for [`crate::grpc`] calls to your own service, without
//! generated code (prost's derive works in the guest too, if you prefer it).
//!
//! ```ignore
//! // EchoRequest { payload = 1: bytes } with payload "hello"
//! let request = proto::Message::new().bytes(1, b"hello").finish();
//! let response = grpc::unary("/ingest.v1.Echo/Echo", &request)?;
//! let payload = proto::field(&response, 1)?.and_then(|v| v.as_bytes());
//! ```
//!
//! Field numbers and wire types as in
//! <https://protobuf.dev/programming-guides/encoding/>: varints (int32,
//! int64, uint*, bool, enum), 64-bit and 32-bit fixed, and length-delimited
//! (bytes, string, nested messages, packed repeated fields).

/// A message being written, field by field, in the order the calls come.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    buf: Vec<u8>,
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

impl Message {
    pub fn new() -> Message {
        Message::default()
    }

    fn tag(&mut self, field: u32, wire_type: u8) {
        put_varint(
            &mut self.buf,
            (u64::from(field) << 3) | u64::from(wire_type),
        );
    }

    /// A varint field: uint32/64, int64, bool, enum (an int32 too: a
    /// negative one is written in ten bytes, as protobuf does).
    pub fn varint(mut self, field: u32, value: u64) -> Message {
        self.tag(field, VARINT);
        put_varint(&mut self.buf, value);
        self
    }

    /// A sint32/sint64 field (zigzag).
    pub fn sint(self, field: u32, value: i64) -> Message {
        self.varint(field, ((value << 1) ^ (value >> 63)) as u64)
    }

    /// A fixed64, sfixed64 or double field (`f64::to_bits`).
    pub fn fixed64(mut self, field: u32, value: u64) -> Message {
        self.tag(field, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// A fixed32, sfixed32 or float field (`f32::to_bits`).
    pub fn fixed32(mut self, field: u32, value: u32) -> Message {
        self.tag(field, FIXED32);
        self.buf.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// A bytes field, or a nested message's encoding.
    pub fn bytes(mut self, field: u32, value: &[u8]) -> Message {
        self.tag(field, LEN);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(value);
        self
    }

    pub fn string(self, field: u32, value: &str) -> Message {
        self.bytes(field, value.as_bytes())
    }

    /// A nested message.
    pub fn message(self, field: u32, value: &Message) -> Message {
        self.bytes(field, &value.buf)
    }

    /// The encoded bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// One field's value as the wire carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// Bytes, a string, a nested message or a packed repeated field.
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(v.into()),
            Value::Bytes(_) => None,
        }
    }

    pub fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A string field, if the bytes are UTF-8.
    pub fn as_str(self) -> Option<&'a str> {
        std::str::from_utf8(self.as_bytes()?).ok()
    }
}

/// The fields of an encoded message, in wire order: `(number, value)`, or
/// an error naming the byte where the encoding broke.
pub fn fields(bytes: &[u8]) -> Fields<'_> {
    Fields { bytes, at: 0 }
}

/// The last value of field `number` (protobuf's rule for a repeated
/// scalar), `None` if absent.
pub fn field(bytes: &[u8], number: u32) -> Result<Option<Value<'_>>, String> {
    let mut last = None;
    for f in fields(bytes) {
        let (n, value) = f?;
        if n == number {
            last = Some(value);
        }
    }
    Ok(last)
}

/// See [`fields`].
pub struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(format!("a varint runs past the end at byte {}", self.at));
            };
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(format!(
            "a varint longer than 10 bytes ends at byte {}",
            self.at
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "a field of {n} bytes at byte {} runs past the message's {} bytes",
                self.at,
                self.bytes.len()
            ));
        };
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn next_field(&mut self) -> Result<(u32, Value<'a>), String> {
        let start = self.at;
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3)
            .map_err(|_| format!("a field number past u32 at byte {start}"))?;
        let value = match (tag & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().unwrap_or([0; 8]),
            )),
            FIXED32 => Value::Fixed32(u32::from_le_bytes(
                self.take(4)?.try_into().unwrap_or([0; 4]),
            )),
            LEN => {
                let n = self.varint()?;
                let n = usize::try_from(n)
                    .map_err(|_| format!("a length past usize at byte {start}"))?;
                Value::Bytes(self.take(n)?)
            }
            other => {
                return Err(format!(
                    "wire type {other} (groups or invalid) at byte {start}"
                ));
            }
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let item = self.next_field();
        if item.is_err() {
            // One error, then the end: the rest cannot be framed.
            self.at = self.bytes.len();
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of protobuf's encoding guide.
    #[test]
    fn writes_the_encoding_guides_examples() {
        // Test1 { a = 1: int32 } with a = 150.
        assert_eq!(Message::new().varint(1, 150).finish(), [0x08, 0x96, 0x01]);
        // Test2 { b = 2: string } with b = "testing".
        assert_eq!(
            Message::new().string(2, "testing").finish(),
            [0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67]
        );
        // Test3 { c = 3: Test1 } with c.a = 150.
        let inner = Message::new().varint(1, 150);
        assert_eq!(
            Message::new().message(3, &inner).finish(),
            [0x1a, 0x03, 0x08, 0x96, 0x01]
        );
        // sint32 -2 is zigzag 3; 1 is 2.
        assert_eq!(Message::new().sint(1, -2).finish(), [0x08, 0x03]);
        assert_eq!(Message::new().sint(1, 1).finish(), [0x08, 0x02]);
    }

    #[test]
    fn reads_back_every_wire_type_and_keeps_the_last_repeated_value() {
        let bytes = Message::new()
            .varint(1, 300)
            .fixed64(2, 7)
            .fixed32(3, 9)
            .bytes(4, b"abc")
            .varint(1, 5)
            .finish();
        let all: Vec<_> = fields(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            all,
            [
                (1, Value::Varint(300)),
                (2, Value::Fixed64(7)),
                (3, Value::Fixed32(9)),
                (4, Value::Bytes(b"abc")),
                (1, Value::Varint(5)),
            ]
        );
        assert_eq!(field(&bytes, 1).unwrap(), Some(Value::Varint(5)));
        assert_eq!(
            field(&bytes, 4).unwrap().and_then(Value::as_str),
            Some("abc")
        );
        assert_eq!(field(&bytes, 9).unwrap(), None);
    }

    #[test]
    fn a_broken_message_is_an_error_naming_where() {
        // Bytes field of 5 bytes with only 2 present.
        let e = field(&[0x0a, 0x05, b'h', b'i'], 1).unwrap_err();
        assert!(e.contains("runs past the message's 4 bytes"), "{e}");
        let e = field(&[0x0b], 1).unwrap_err();
        assert!(e.contains("wire type 3"), "{e}");
        let e = field(&[0x08, 0x80], 1).unwrap_err();
        assert!(e.contains("runs past the end"), "{e}");
    }
}
