//! What a slice is, across formats: CUDA API call, kernel, memory copy, NVTX range, ...
//! Importers write the category names below; [`classify`] also knows the categories other
//! producers use (PyTorch/Kineto, CUPTI JSON), so analyses work on any input.

/// Category names tracex importers use (Kineto's where Kineto has one).
pub mod cat {
    pub const CUDA_RUNTIME: &str = "cuda_runtime";
    pub const CUDA_DRIVER: &str = "cuda_driver";
    pub const KERNEL: &str = "kernel";
    pub const MEMCPY: &str = "gpu_memcpy";
    pub const MEMSET: &str = "gpu_memset";
    pub const SYNC: &str = "cuda_sync";
    pub const GRAPH: &str = "cuda_graph";
    pub const NVTX: &str = "nvtx";
    /// An NVTX range projected onto the GPU time of the work launched inside it.
    pub const NVTX_KERNEL: &str = "nvtx_kernel";
    pub const OSRT: &str = "osrt";
    pub const MPI: &str = "mpi";
    pub const CUBLAS: &str = "cublas";
    pub const CUDNN: &str = "cudnn";
    pub const OPENACC: &str = "openacc";
    pub const OPENMP: &str = "openmp";
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SliceKind {
    CudaApi,
    Kernel,
    Memcpy,
    Memset,
    Sync,
    Nvtx,
    /// NVTX ranges projected onto the GPU (nsys `nvtx-kernel`).
    NvtxKernel,
    Osrt,
    Mpi,
    Library,
    Other,
}

impl SliceKind {
    pub fn name(self) -> &'static str {
        match self {
            SliceKind::CudaApi => "cuda-api",
            SliceKind::Kernel => "kernel",
            SliceKind::Memcpy => "memcpy",
            SliceKind::Memset => "memset",
            SliceKind::Sync => "sync",
            SliceKind::Nvtx => "nvtx",
            SliceKind::NvtxKernel => "nvtx-kernel",
            SliceKind::Osrt => "osrt",
            SliceKind::Mpi => "mpi",
            SliceKind::Library => "library",
            SliceKind::Other => "other",
        }
    }

    /// Whether this kind runs on a GPU.
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            SliceKind::Kernel
                | SliceKind::Memcpy
                | SliceKind::Memset
                | SliceKind::Sync
                | SliceKind::NvtxKernel
        )
    }
}

/// Classifies a slice by its category (case-insensitive; the first known entry of a
/// comma-separated list wins).
pub fn classify(cat: Option<&str>) -> SliceKind {
    let Some(cat) = cat else {
        return SliceKind::Other;
    };
    for part in cat.split(',') {
        let k = match part.trim().to_ascii_lowercase().as_str() {
            // rocprofiler-sdk (rocprofv3) names its categories after its tracing domains
            "cuda_runtime" | "cuda_driver" | "runtime" | "driver" | "cuda_api" | "hip_api"
            | "hsa_api" => SliceKind::CudaApi,
            "kernel" | "gpu_kernel" | "concurrent_kernel" | "kernel_dispatch" => SliceKind::Kernel,
            "gpu_memcpy" | "memcpy" | "memory_copy" => SliceKind::Memcpy,
            "gpu_memset" | "memset" => SliceKind::Memset,
            "cuda_sync" | "synchronization" => SliceKind::Sync,
            "nvtx" | "user_annotation" | "marker_api" => SliceKind::Nvtx,
            "nvtx_kernel" | "gpu_user_annotation" => SliceKind::NvtxKernel,
            "osrt" => SliceKind::Osrt,
            "mpi" => SliceKind::Mpi,
            "cublas" | "cudnn" | "openacc" | "openmp" | "rccl_api" => SliceKind::Library,
            _ => continue,
        };
        return k;
    }
    SliceKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_other_producers() {
        assert_eq!(classify(Some("cuda_runtime")), SliceKind::CudaApi);
        assert_eq!(classify(Some("GPU_Kernel")), SliceKind::Kernel);
        assert_eq!(classify(Some("Memcpy")), SliceKind::Memcpy);
        assert_eq!(classify(Some("foo,nvtx")), SliceKind::Nvtx);
        // rocprofv3's Perfetto and OTF2 outputs
        assert_eq!(classify(Some("kernel_dispatch")), SliceKind::Kernel);
        assert_eq!(classify(Some("memory_copy")), SliceKind::Memcpy);
        assert_eq!(classify(Some("hip_api")), SliceKind::CudaApi);
        assert_eq!(classify(Some("marker_api")), SliceKind::Nvtx);
        assert_eq!(classify(Some("memory_allocation")), SliceKind::Other);
        assert_eq!(classify(Some("cpu_op")), SliceKind::Other);
        assert_eq!(classify(None), SliceKind::Other);
    }
}
