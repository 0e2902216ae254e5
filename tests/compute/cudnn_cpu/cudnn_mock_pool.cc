// SPDX-License-Identifier: Apache-2.0
// The mock cuDNN's pooling: not computed yet, every call is CUDNN_STATUS_NOT_SUPPORTED
// (the tests that need it are filtered out in meson.build).
#include "cudnn_mock.h"
extern "C" {
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t, const cudnnPoolingDescriptor_t, const void *, const cudnnTensorDescriptor_t, const void *, const void *, const cudnnTensorDescriptor_t, void *) { return CUDNN_STATUS_NOT_SUPPORTED; }
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t, const cudnnPoolingDescriptor_t, const void *, const cudnnTensorDescriptor_t, const void *, const cudnnTensorDescriptor_t, const void *, const cudnnTensorDescriptor_t, const void *, const void *, const cudnnTensorDescriptor_t, void *) { return CUDNN_STATUS_NOT_SUPPORTED; }
}
