// SPDX-License-Identifier: Apache-2.0
//! The unsafe path of `OpParams` with valid arguments: device memory from `cudaMalloc` and
//! a stream from `cudaStreamCreateWithFlags`, with the cuda memory provider on the build
//! tree's mock CUDA runtime (its "device memory" is host memory, so a slice over it is a
//! valid slice). The input is written by copies still queued on the stream when the
//! collective is called, so the result is right only if the library honoured the stream.
//!
//! The provider links libcudart.so.13, which only LD_LIBRARY_PATH can point at the mock,
//! so the test runs itself again as a child process with that environment. Without the
//! provider or the mock in the build tree it says so and does nothing.
mod common;

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_uint};
use std::path::PathBuf;
use std::process::Command;

use disttrain::{Context, Memory, OpParams, ReduceOp};

const CHILD: &str = "DISTTRAIN_RUST_DEVICE_MEMORY_CHILD";
const TEST: &str = "device_memory_and_a_stream_through_the_unsafe_constructor";

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;
const HOST_TO_DEVICE: c_int = 1; // cudaMemcpyHostToDevice

type Malloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void) -> c_int;
type StreamCreate = unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int;
type StreamDestroy = unsafe extern "C" fn(*mut c_void) -> c_int;
type MemcpyAsync =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> c_int;

/// The CUDA runtime functions the test calls, from the library the provider loaded.
struct Cuda {
    malloc: Malloc,
    free: Free,
    stream_create: StreamCreate,
    stream_destroy: StreamDestroy,
    memcpy_async: MemcpyAsync,
}

impl Cuda {
    fn open(path: &str) -> Cuda {
        let file = CString::new(path).unwrap();
        let lib = unsafe { dlopen(file.as_ptr(), RTLD_NOW) };
        assert!(!lib.is_null(), "dlopen {path} failed");
        let sym = |name: &str| {
            let name_c = CString::new(name).unwrap();
            let f = unsafe { dlsym(lib, name_c.as_ptr()) };
            assert!(!f.is_null(), "{path} has no {name}");
            f
        };
        // Each symbol has the C signature of the CUDA runtime's function it names.
        unsafe {
            Cuda {
                malloc: std::mem::transmute::<*mut c_void, Malloc>(sym("cudaMalloc")),
                free: std::mem::transmute::<*mut c_void, Free>(sym("cudaFree")),
                stream_create: std::mem::transmute::<*mut c_void, StreamCreate>(
                    sym("cudaStreamCreateWithFlags")),
                stream_destroy: std::mem::transmute::<*mut c_void, StreamDestroy>(
                    sym("cudaStreamDestroy")),
                memcpy_async: std::mem::transmute::<*mut c_void, MemcpyAsync>(
                    sym("cudaMemcpyAsync")),
            }
        }
    }
}

#[test]
fn device_memory_and_a_stream_through_the_unsafe_constructor() {
    if std::env::var_os(CHILD).is_some() {
        run_on_the_mock_device();
        return;
    }
    let tree = PathBuf::from(env!("DISTTRAIN_BUILD_TREE"));
    let provider = tree.join("plugins/memory/cuda");
    let cudart = tree.join("tests/plugins/nccl/cudart13");
    if !provider.join("libdt-memory-cuda.so").exists()
        || !cudart.join("libcudart.so.13").exists()
    {
        eprintln!("no cuda memory provider or mock libcudart.so.13 in the build tree \
                   ({}): device memory test not run", tree.display());
        return;
    }
    common::setup_env();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", TEST, "--nocapture", "--test-threads=1"]);
    for (k, _) in std::env::vars() {
        if k.starts_with("DISTTRAIN_") && k != "DISTTRAIN_PLUGIN_PATH" {
            cmd.env_remove(k);
        }
    }
    let plugins = std::env::var("DISTTRAIN_PLUGIN_PATH").unwrap_or_default();
    let ld_path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", cudart.display()),
        _ => cudart.display().to_string(),
    };
    let out = cmd
        .env(CHILD, "1")
        .env("DISTTRAIN_PLUGIN_PATH", format!("{plugins}:{}", provider.display()))
        .env("DISTTRAIN_MEMORY", "cuda")
        .env("DISTTRAIN_DEVICE_TRANSPORT", "none")
        .env("LD_LIBRARY_PATH", ld_path)
        .env("DISTTRAIN_CUDA_RUNTIME_LIBRARY", cudart.join("libcudart.so.13"))
        .env("DISTTRAIN_MOCK_CUDA_COPY_DELAY_US", "100000")
        .output()
        .expect("run the test again as a child");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout),
                       String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("device memory and stream: OK"), "child did not run:\n{text}");
}

fn run_on_the_mock_device() {
    let ctx = Context::new().expect("single-process context with the cuda provider");
    let cuda = Cuda::open(&std::env::var("DISTTRAIN_CUDA_RUNTIME_LIBRARY").unwrap());
    const N: usize = 4096;
    let mut dev: *mut c_void = std::ptr::null_mut();
    let mut stream: *mut c_void = std::ptr::null_mut();
    let stale = vec![-1f32; N];
    let input: Vec<f32> = (0..N).map(|i| i as f32).collect();
    unsafe {
        assert_eq!((cuda.malloc)(&mut dev, N * 4), 0);
        assert_eq!((cuda.stream_create)(&mut stream, 0), 0);
        // Each copy runs one mock copy delay after the one before it, so the input lands
        // three delays after the stale values: a call that ignored the stream, its own
        // copies each one delay away, would read zeros or stale values.
        for src in [&stale, &stale, &stale, &input] {
            assert_eq!((cuda.memcpy_async)(dev, src.as_ptr().cast(), N * 4, HOST_TO_DEVICE,
                                           stream), 0);
        }
    }
    // SAFETY: `dev` is N floats of cudaMalloc'd memory of device 0 (host memory in the
    // mock, so a slice may point at it), used by nothing else during the calls; `stream`
    // is a live stream of device 0 until it is destroyed below.
    let buf = unsafe { std::slice::from_raw_parts_mut(dev.cast::<f32>(), N) };
    let params = unsafe { OpParams::on_device(0, stream) };
    assert_eq!((params.memory(), params.device(), params.stream()),
               (Memory::Device, Some(0), stream));
    ctx.named("device.sum").with_op_params(&params)
        .allreduce_in_place(buf, ReduceOp::Sum)
        .expect("allreduce of device memory on the producer's stream");
    assert_eq!(buf, &input[..], "the allreduce did not wait for the copy on the stream");

    let mut dev_out: *mut c_void = std::ptr::null_mut();
    unsafe { assert_eq!((cuda.malloc)(&mut dev_out, N * 4), 0) };
    // SAFETY: as above, a second cudaMalloc'd block; the provider finds the device.
    let out = unsafe { std::slice::from_raw_parts_mut(dev_out.cast::<f32>(), N) };
    let found = unsafe { OpParams::device_memory().with_stream(stream) };
    ctx.with_op_params(&found).allgather(buf, out).expect("allgather of device memory");
    assert_eq!(out, &input[..]);
    unsafe {
        (cuda.free)(dev_out);
        (cuda.free)(dev);
        (cuda.stream_destroy)(stream);
    }
    println!("device memory and stream: OK");
}
