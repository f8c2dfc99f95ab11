use std::process::ExitCode;

#[global_allocator]
static ALLOC: blocklab::run::alloc::CountingAlloc = blocklab::run::alloc::CountingAlloc;

fn main() -> ExitCode {
    match blocklab::cli::main() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
