use std::io::Write;
use std::process::ExitCode;

#[global_allocator]
static ALLOC: blocklab::machine::alloc::CountingAlloc = blocklab::machine::alloc::CountingAlloc;

fn main() -> ExitCode {
    match blocklab::cli::main() {
        Ok(code) => code,
        Err(error) => {
            // A closed stderr must not turn the error into a panic (101).
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
