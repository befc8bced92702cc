.target amx
.input 0 @64 s32[5,5]
.input 1 @192 s32[]
.input 2 @256 f32[1,1,5]
.input 3 @320 f32[1,2,1]
.output 0 @384 f32[2,1,1]
vmovdqu8_load(n=8, dst=0, addr=320)
vmovdqu8_store(n=8, src=0, addr=384)
