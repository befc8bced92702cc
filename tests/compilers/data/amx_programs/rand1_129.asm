.target amx
.input 0 @64 u8[]
.input 1 @128 u8[]
.input 2 @192 f32[2,5]
.input 3 @256 s32[]
.output 0 @320 s32[1,1]
vbroadcastss(dst=0, addr=256)
vmovdqu8_store(n=4, src=0, addr=320)
