# paper/qkv_attention.hlo compiled for qkv by accv compile
.target qkv
.input 0 @64 bf16[64,64]
.input 1 @8256 bf16[64,64]
.input 2 @16448 bf16[64,64]
.output 0 @24640 bf16[64,64]
load_rm(n=64, addr_in=64, addr_out=64)
load_cm(n=64, addr_in=8256, addr_out=0)
gemm(addr_1=64, addr_2=0, addr_out=0)
softmax(n=64, addr=0)
mov(n=64, addr_in=0, addr_out=64)
load_rm(n=64, addr_in=16448, addr_out=0)
gemm(addr_1=64, addr_2=0, addr_out=0)
mov(n=64, addr_in=0, addr_out=0)
store_rm(n=64, addr_in=0, addr_out=24640)
