.target amx
.output 0 @64 s32[5]
.const @64 feffffff499609d9f36ce54f906f8ef37f000000
