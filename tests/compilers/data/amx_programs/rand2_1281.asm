.target amx
.input 0 @64 f32[2,4,2]
.input 1 @128 f32[2,2,2]
.output 0 @192 f32[2,10,2]
.const @192 0200803f82a60fc100000080000080bf
.const @208 f9a008c200008080000080bff2d232c1
.const @272 a404c0425128e33e9bae813efa6d2e3d
.const @288 0000003fc51704c3ffff7f7f000080bf
vmovups_load(dst=0, addr=64)
vmovdqu8_store(n=16, src=0, addr=224)
vmovdqu8_load(n=16, dst=0, addr=80)
vmovdqu8_store(n=16, src=0, addr=240)
vmovdqu8_load(n=16, dst=0, addr=128)
vmovdqu8_store(n=16, src=0, addr=256)
vmovdqu8_load(n=16, dst=0, addr=96)
vmovdqu8_store(n=16, src=0, addr=304)
vmovdqu8_load(n=16, dst=0, addr=112)
vmovdqu8_store(n=16, src=0, addr=320)
vmovdqu8_load(n=16, dst=0, addr=144)
vmovdqu8_store(n=16, src=0, addr=336)
