#pragma once
// AOTInductor's package loader, made where condbench can clean up after it. The loader extracts its
// package into a folder of its own under the temporary folder (std::filesystem::temp_directory_path:
// $TMPDIR, $TMP, ..., else /tmp), 1-6 MB a package, and removes it only when it is destroyed: never
// for a loader kept for the process, nor in a process killed or stopped by a signal. So every
// loader of a condbench process extracts inside one folder of the process's own,
// condbench-aoti-XXXXXX, whose .lock the process holds (flock) for its whole life: the folder goes
// at exit, and a folder of the same user whose lock nobody holds (its process died) goes when the
// next process makes its own.
#include <memory>
#include <string>

#include <c10/core/Device.h>

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace condbench {

// The loader of the package at `path`: one model, run single-threaded on the caller's thread and
// stream with no wait (condbench runs one inference at a time, and the thread-safe runner's wait
// for the previous run would block the host behind a held stream); `device_index` -1 on the CPU, 0
// on CUDA. Throws what AOTInductor throws. Loaders are made one at a time: TMPDIR names the
// process's folder while one is made (setenv; no other thread of condbench reads the environment
// then), and then what it was.
std::unique_ptr<torch::inductor::AOTIModelPackageLoader> make_aoti_loader(const std::string& path,
                                                                          c10::DeviceIndex device_index);

}  // namespace condbench
