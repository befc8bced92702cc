# seed 000 Fig. 10b: the compiled QKV attention program (examples/regression/qkv_attention.hlo)
# HBM: Q @0, K @8192, V @16384 (bf16[64,64] row-major, 8192 bytes each), output @24576.
.target qkv
.input 0 @0 bf16[64,64]
.input 1 @8192 bf16[64,64]
.input 2 @16384 bf16[64,64]
.output 0 @24576 bf16[64,64]
load_rm(n=64, addr_in=0, addr_out=0)          # Q -> d1[0:64]
load_cm(n=64, addr_in=8192, addr_out=64)      # K^T -> d1[64:128]
gemm(addr_1=0, addr_2=64, addr_out=0)         # S = Q K^T -> d2
softmax(n=64, addr=0)                         # P = softmax(S), in place
mov(n=64, addr_in=0, addr_out=0)              # P -> d1[0:64]
load_rm(n=64, addr_in=16384, addr_out=64)     # V -> d1[64:128]
gemm(addr_1=0, addr_2=64, addr_out=0)         # O = P V -> d2
mov(n=64, addr_in=0, addr_out=0)              # O -> d1[0:64]
store_rm(n=64, addr_in=0, addr_out=24576)     # O -> HBM
